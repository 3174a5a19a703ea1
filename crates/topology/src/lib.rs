//! Hardware profiles (chip layout, links, vNPU templates), parsers of `nvidia-smi topo -m` and `npu-smi info`, and the device allocators that pick exact devices for a pod.

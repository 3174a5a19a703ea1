module ringleader.invalid/k8s-write-rate

go 1.22

// Command gen writes golden files for ringleader-protobuf's tests: for each
// object, NAME.pb (kube's protobuf serializer output, the bytes
// kube-apiserver sends) and NAME.json (encoding/json of the same Go value).
// watch-added.pb is one watch frame built the way
// k8s.io/apiserver/pkg/endpoints/handlers (watchEncoder.doEncode) builds it.
//
// Run from this directory: go run . ..   (writes into testdata/)
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func write(dir, name string, obj runtime.Object) []byte {
	scheme := runtime.NewScheme()
	ser := protobuf.NewSerializer(scheme, scheme)
	var buf bytes.Buffer
	must(ser.Encode(obj, &buf))
	must(os.WriteFile(filepath.Join(dir, name+".pb"), buf.Bytes(), 0o644))
	js, err := json.MarshalIndent(obj, "", "  ")
	must(err)
	must(os.WriteFile(filepath.Join(dir, name+".json"), append(js, '\n'), 0o644))
	return buf.Bytes()
}

func main() {
	dir := os.Args[1]
	created := metav1.NewTime(time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC))

	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "settings", Namespace: "team-a", UID: "0b5c6f5e-1111-2222-3333-444455556666",
			ResourceVersion: "42", CreationTimestamp: created,
			Labels: map[string]string{"b": "2", "a": "1"},
		},
		Data:       map[string]string{"mode": "fast", "empty": ""},
		BinaryData: map[string][]byte{"blob": {0, 1, 2, 255}},
	}
	cmBytes := write(dir, "configmap", cm)

	write(dir, "namespace", &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	})

	grace := int64(30)
	tol := int64(300)
	write(dir, "pod", &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "team-a", CreationTimestamp: created},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				},
			}},
			TerminationGracePeriodSeconds: &grace,
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tol}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created}},
		},
	})

	write(dir, "service", &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)},
			},
		},
	})

	replicas := int32(3)
	write(dir, "deployment", &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	})

	write(dir, "status", &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Message: `pods "x" not found`, Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{Name: "x", Kind: "pods"}, Code: 404,
	})

	write(dir, "configmaplist", &corev1.ConfigMapList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "tok"},
		Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Data: map[string]string{"k": "v"}}},
	})

	// The watch frame, as watchEncoder.doEncode writes it: the object with the
	// negotiated (enveloping) serializer, the WatchEvent with the stream
	// serializer (RawSerializer: no envelope), then the length-delimited framer.
	raw := protobuf.NewRawSerializer(runtime.NewScheme(), runtime.NewScheme())
	var ev bytes.Buffer
	must(raw.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: cmBytes}}, &ev))
	var frame bytes.Buffer
	_, err := protobuf.LengthDelimitedFramer.NewFrameWriter(&frame).Write(ev.Bytes())
	must(err)
	must(os.WriteFile(filepath.Join(dir, "watch-added.pb"), frame.Bytes(), 0o644))
}

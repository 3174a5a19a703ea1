// Command goshape writes ../goshape.txt: for every Kubernetes protobuf message
// reachable from the supported groups, how its Go struct field behaves, which
// the .proto cannot say. Go's gogo marshaller writes non-pointer fields even
// when zero, and encoding/json omits zero `omitempty` fields, so a faithful
// codec needs both facts. One line per message:
//
//	<proto message full name> <number>:<flag> ...
//
// flags: o = non-pointer scalar with omitempty (JSON omits zero),
// z = non-pointer scalar without omitempty (JSON always shows it),
// s = non-pointer struct (always on the wire, always in JSON),
// i = embedded struct whose fields JSON shows inline in the parent,
// p = pointer, slice or map (listed only when renamed: for these, presence on
// the wire matches presence in JSON).
// A third part, <number>:<flag>:<json name>, gives the JSON name where it
// differs from the .proto field name (e.g. uID → uid).
//
// Run from this directory: go run . > ../goshape.txt
package main

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var lines = map[string]string{}

func protoName(t reflect.Type) string {
	return strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + t.Name()
}

func walk(t reflect.Type) {
	for t.Kind() == reflect.Ptr || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map {
			walk(t.Key())
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "" {
		return
	}
	name := protoName(t)
	if _, seen := lines[name]; seen {
		return
	}
	lines[name] = ""
	var parts []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		walk(f.Type)
		if tag == "" || tag == "-" {
			continue
		}
		num, err := strconv.Atoi(strings.Split(tag, ",")[1])
		if err != nil {
			panic(err)
		}
		jsonTag := f.Tag.Get("json")
		omit := strings.Contains(jsonTag, ",omitempty")
		var flag string
		switch {
		case strings.Contains(jsonTag, ",inline"):
			flag = "i"
		case f.Type.Kind() == reflect.Ptr || f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map:
			flag = "p"
		case f.Type.Kind() == reflect.Struct:
			flag = "s"
		case omit:
			flag = "o"
		default:
			flag = "z"
		}
		protoName := ""
		for _, part := range strings.Split(tag, ",") {
			if strings.HasPrefix(part, "name=") {
				protoName = strings.TrimPrefix(part, "name=")
			}
		}
		if jsonName := strings.Split(jsonTag, ",")[0]; flag != "i" && jsonName != "" && jsonName != protoName {
			flag += ":" + jsonName
		} else if flag == "p" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d:%s", num, flag))
	}
	lines[name] = strings.Join(parts, " ")
}

func main() {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, rbacv1.AddToScheme,
		schedulingv1.AddToScheme, policyv1.AddToScheme, authnv1.AddToScheme, authzv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme, autoscalingv1.AddToScheme,
		networkingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	for _, t := range s.AllKnownTypes() {
		walk(t)
	}
	for _, o := range []any{metav1.Status{}, metav1.WatchEvent{}, metav1.APIResourceList{}, metav1.APIGroupList{}, metav1.APIVersions{}} {
		walk(reflect.TypeOf(o))
	}
	names := make([]string, 0, len(lines))
	for n, l := range lines {
		if l != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n, lines[n])
	}
}

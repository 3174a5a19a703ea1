// Command informer runs client-go's SharedInformerFactory on Pods, Nodes and
// Namespaces against a cluster, with the protobuf content type Kubernetes'
// own components set, for a while, and prints as JSON what it saw: events
// per kind, the LIST and WATCH requests it made (a relist loop shows as more
// than one LIST per kind), watch errors, and the content types of the
// answers. Run by crates/cli/tests/client_go.rs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type counts struct {
	Add    int `json:"add"`
	Update int `json:"update"`
	Delete int `json:"delete"`
}

type report struct {
	mu          sync.Mutex
	Events      map[string]*counts `json:"events"`
	Lists       map[string]int     `json:"lists"`
	Watches     map[string]int     `json:"watches"`
	WatchErrors []string           `json:"watchErrors"`
	// Content types of the answers to LIST and WATCH requests.
	ContentTypes map[string]int `json:"contentTypes"`
}

type counting struct {
	next http.RoundTripper
	r    *report
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet {
		return resp, err
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	kind := parts[len(parts)-1]
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	if req.URL.Query().Get("watch") == "true" {
		c.r.Watches[kind]++
	} else {
		c.r.Lists[kind]++
	}
	c.r.ContentTypes[resp.Header.Get("Content-Type")]++
	return resp, err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	seconds := flag.Int("seconds", 60, "how long to watch (1..3600)")
	ready := flag.String("ready", "", "file written once the caches have synced")
	flag.Parse()
	if *seconds < 1 || *seconds > 3600 {
		fmt.Fprintln(os.Stderr, "-seconds: 1..3600")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(1)
	}
	// As kube-controller-manager and the scheduler configure their clients.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	r := &report{Events: map[string]*counts{}, Lists: map[string]int{}, Watches: map[string]int{}, ContentTypes: map[string]int{}, WatchErrors: []string{}}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return counting{next: next, r: r} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	informersByKind := map[string]cache.SharedIndexInformer{
		"pods":       factory.Core().V1().Pods().Informer(),
		"nodes":      factory.Core().V1().Nodes().Informer(),
		"namespaces": factory.Core().V1().Namespaces().Informer(),
	}
	for kind, inf := range informersByKind {
		kind := kind
		c := &counts{}
		r.Events[kind] = c
		note := func(f func()) { r.mu.Lock(); f(); r.mu.Unlock() }
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { note(func() { c.Add++ }) },
			UpdateFunc: func(any, any) { note(func() { c.Update++ }) },
			DeleteFunc: func(any) { note(func() { c.Delete++ }) },
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "handler:", err)
			os.Exit(1)
		}
		if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			note(func() { r.WatchErrors = append(r.WatchErrors, kind+": "+err.Error()) })
		}); err != nil {
			fmt.Fprintln(os.Stderr, "watch error handler:", err)
			os.Exit(1)
		}
	}
	stop := make(chan struct{})
	factory.Start(stop)
	for kind, synced := range factory.WaitForCacheSync(stop) {
		if !synced {
			fmt.Fprintln(os.Stderr, "cache never synced:", kind)
			os.Exit(1)
		}
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte("synced\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "ready file:", err)
			os.Exit(1)
		}
	}
	time.Sleep(time.Duration(*seconds) * time.Second)
	close(stop)
	factory.Shutdown()
	r.mu.Lock()
	defer r.mu.Unlock()
	out, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

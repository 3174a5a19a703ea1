// Command k8s-write-rate measures how fast a kube-apiserver started by
// scripts/k8s-env.sh accepts creates: N objects (ConfigMaps or Pods) POSTed
// by W concurrent workers over one HTTP/2 connection, the apiserver's own
// write rate, which is the floor for any controller that writes through it.
// Standard library only, so it builds in seconds with no downloads.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	dir := flag.String("dir", "", "the DIR given to `k8s-env.sh start`")
	n := flag.Int("n", 2000, "objects to create (1..100000)")
	workers := flag.Int("workers", 32, "concurrent requests (1..1000)")
	kind := flag.String("kind", "configmaps", "configmaps or pods")
	limit := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*dir, *n, *workers, *kind, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-write-rate:", err)
		os.Exit(1)
	}
}

func readEnv(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

func body(kind, ns string, i int) []byte {
	if kind == "pods" {
		return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%05d","namespace":%q,`+
			`"labels":{"app":"bench"}},"spec":{"schedulerName":"ringleader","containers":[{"name":"main",`+
			`"image":"busybox","command":["sleep","600"],"resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}}`, i, ns))
	}
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","namespace":%q},`+
		`"data":{"rank":"%d","hccl.json":"{\"server_count\":\"1\"}"}}`, i, ns, i))
}

func run(dir string, n, workers int, kind string, limit time.Duration) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if n < 1 || n > 100000 {
		return fmt.Errorf("-n %d: allowed 1..100000", n)
	}
	if workers < 1 || workers > 1000 {
		return fmt.Errorf("-workers %d: allowed 1..1000", workers)
	}
	if kind != "configmaps" && kind != "pods" {
		return fmt.Errorf("-kind %q: allowed configmaps, pods", kind)
	}
	env, err := readEnv(dir)
	if err != nil {
		return err
	}
	server := env["APISERVER"]
	if !strings.HasPrefix(server, "https://127.0.0.1:") {
		return fmt.Errorf("APISERVER=%q in %s/env: only https://127.0.0.1 is allowed", server, dir)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(tok))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s/ca.crt holds no certificate", dir)
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: workers,
		},
	}
	post := func(path string, b []byte) error {
		req, err := http.NewRequest("POST", server+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST %s: %s: %s", path, resp.Status, msg)
		}
		return nil
	}

	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if err := post("/api/v1/namespaces", []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns))); err != nil {
		return err
	}
	path := "/api/v1/namespaces/" + ns + "/" + kind
	var next, failed atomic.Int64
	var errOnce sync.Once
	var firstErr error
	lat := make([]time.Duration, n)
	deadline := time.Now().Add(limit)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || time.Now().After(deadline) {
					return
				}
				t := time.Now()
				if err := post(path, body(kind, ns, i)); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	done := int(next.Load())
	if done > n {
		done = n
	}
	sort.Slice(lat[:done], func(a, b int) bool { return lat[a] < lat[b] })
	q := func(p float64) time.Duration { return lat[int(p*float64(done-1))].Round(100 * time.Microsecond) }
	fmt.Printf("created %d %s in namespace %s with %d workers in %.2f s: %.0f/s, latency p50 %v p99 %v max %v, %d failed\n",
		done-int(failed.Load()), kind, ns, workers, elapsed.Seconds(), float64(done-int(failed.Load()))/elapsed.Seconds(),
		q(0.5), q(0.99), q(1), failed.Load())
	if firstErr != nil {
		return fmt.Errorf("first failure: %v", firstErr)
	}
	return nil
}

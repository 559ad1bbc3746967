/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/frugal-operator/foo-operator/test/localenv"
)

// burstRequests records the requests of a burst per Foo, from the counts
// before it, the harness's own creates and scrapes taken out.
func (r *run) burstRequests(ctx context.Context, res *Result, before map[string]float64) error {
	after, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	d := delta(before, after)
	d["POST foos"] -= float64(res.Burst)
	delete(d, "GET ") // non-resource GETs: the harness's /metrics scrapes
	res.Requests = map[string]float64{}
	for _, k := range sortedKeys(d) {
		if d[k] <= 0 || strings.HasPrefix(k, "WATCH") {
			continue
		}
		per := d[k] / float64(res.Burst)
		res.Requests[k] = per
		if isWrite(k) {
			res.WritesPerFoo += per
		} else {
			res.ReadsPerFoo += per
		}
	}
	return nil
}

// pingResync sends the event PingSource sends and records what the resync
// cost the API server, with every Foo converged.
func (r *run) pingResync(ctx context.Context, res *Result) error {
	r.cfg.Log("N=%d: %s: ping resync", r.n, res.Controller)
	req, err := r.pingRequest(ctx)
	if err != nil {
		return err
	}
	before, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	res.ResyncMs = ms(time.Since(start))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the ping resync was answered %d", resp.StatusCode)
	}
	after, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	res.Resync = delta(before, after)
	delete(res.Resync, "GET ") // the harness's first scrape of /metrics
	return nil
}

// pingRequest is the event PingSource sends, with a token as PingSource's
// under sender authentication (asked for before the count begins).
func (r *run) pingRequest(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(r.port), strings.NewReader(`{"resync":true}`))
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "bench-resync", "Ce-Type": "dev.knative.sources.ping",
		"Ce-Source": "/apis/v1/namespaces/" + localenv.Namespace + "/pingsources/foo-resync", "Content-Type": "application/json"} {
		req.Header.Set(k, v)
	}
	if r.cfg.SenderAuth {
		token, err := localenv.Token(ctx, r.kube, localenv.ResyncIdentity, localenv.OIDCAudience)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// settle waits until the API server's request counters stop moving for a
// second (the controller's start-up work done), at most a minute.
func (r *run) settle(ctx context.Context) {
	var last float64 = -1
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := requestCounts(ctx, r.kube)
		if err != nil {
			return false, nil
		}
		total := 0.0
		for k, v := range c {
			if !strings.HasPrefix(k, "WATCH") {
				total += v
			}
		}
		// The scrape itself is one request.
		stable := total-last <= 1
		last = total
		return stable, nil
	})
}

// requestCounts reads kube-apiserver's apiserver_request_total, summed by
// "VERB resource[/subresource]".
func requestCounts(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		labels := parseLabels(line[len("apiserver_request_total{"):end])
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		out[labels["verb"]+" "+res] += v
	}
	return out, sc.Err()
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			break
		}
		key := s[:eq]
		rest := s[eq+2:]
		q := strings.IndexByte(rest, '"')
		if q < 0 {
			break
		}
		out[key] = rest[:q]
		s = strings.TrimPrefix(rest[q+1:], ",")
	}
	return out
}

// delta returns after - before, without the entries that did not change.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// isWrite tells whether "VERB resource" changes state.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

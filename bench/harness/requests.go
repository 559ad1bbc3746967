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
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/frugal-operator/foo-operator/test/localenv"
)

var (
	requestTotal = regexp.MustCompile(`(?m)^apiserver_request_total\{(.*)\} (\S+)$`)
	metricLabel  = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// requestCounts reads the API server's apiserver_request_total.
func requestCounts(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return parseRequests(string(raw)), err
}

// parseRequests sums apiserver_request_total by "VERB resource[/subresource]",
// leaving out requests of no resource (the harness's scrapes of /metrics).
func parseRequests(metrics string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range requestTotal.FindAllStringSubmatch(metrics, -1) {
		l := map[string]string{}
		for _, kv := range metricLabel.FindAllStringSubmatch(m[1], -1) {
			l[kv[1]] = kv[2]
		}
		if l["resource"] == "" {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[key] += v
	}
	return out
}

// burstRequests records the requests per Foo of the burst since before,
// watches and the harness's creates left out.
func (r *run) burstRequests(ctx context.Context, res *Result, before map[string]float64) error {
	after, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	d := delta(before, after)
	d["POST foos"] -= float64(res.Burst)
	res.Requests = map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(d)) {
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

// pingResync sends ours the event PingSource sends (with its token under
// sender authentication, asked for before the count) and records what the
// resync cost the API server.
func (r *run) pingResync(ctx context.Context, res *Result) error {
	r.cfg.Log("N=%d: %s: ping resync", r.n, res.Controller)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, strings.NewReader(`{"resync":true}`))
	if err != nil {
		return err
	}
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "bench-resync", "Ce-Type": "dev.knative.sources.ping",
		"Ce-Source": "/apis/v1/namespaces/" + localenv.Namespace + "/pingsources/" + localenv.Foo.PingSource, "Content-Type": "application/json"} {
		req.Header.Set(k, v)
	}
	if r.cfg.SenderAuth {
		token, err := localenv.Token(ctx, r.kube, localenv.ResyncIdentity, localenv.OIDCAudience)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
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
	res.Resync = delta(before, after)
	return err
}

// settle waits until the API server's request counters, watches aside,
// stop moving for a second (the last phase's work done), at most a minute.
func (r *run) settle(ctx context.Context) {
	last := -1.0
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
		stable := total == last
		last = total
		return stable, nil
	})
}

// delta returns after - before, without the entries that did not grow.
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
	return slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"}, verb)
}

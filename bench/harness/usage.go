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
	"os"
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
// leaving out watches, requests of no resource (the harness's scrapes) and
// Leases: the counter is the whole server's, the kube-apiserver renews its
// identity Lease every 10 s, and no controller the harness runs holds one.
func parseRequests(metrics string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range requestTotal.FindAllStringSubmatch(metrics, -1) {
		l := map[string]string{}
		for _, kv := range metricLabel.FindAllStringSubmatch(m[1], -1) {
			l[kv[1]] = kv[2]
		}
		if l["resource"] == "" || l["resource"] == "leases" || l["verb"] == "WATCH" {
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

// perFoo records the requests of a burst per Foo, and the writes and reads.
func (res *Result) perFoo(requests map[string]float64) {
	res.Requests = map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(requests)) {
		if requests[k] <= 0 {
			continue
		}
		per := requests[k] / float64(res.Burst)
		if res.Requests[k] = per; isWrite(k) {
			res.WritesPerFoo += per
		} else {
			res.ReadsPerFoo += per
		}
	}
}

// settle waits, up to a minute, until the API server's request counters stand still for a second.
func (r *run) settle(ctx context.Context) {
	last := -1.0
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := requestCounts(ctx, r.kube)
		total := 0.0
		for _, v := range c {
			total += v
		}
		stable := err == nil && total == last
		last = total
		return stable, nil
	})
}

// pingResync sends ours PingSource's event (its token asked for before the
// count) and records what the resync cost the API server.
func (r *run) pingResync(ctx context.Context, res *Result) error {
	r.cfg.Log("N=%d: %s: ping resync", r.n, res.Controller)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, strings.NewReader(`{"resync":true}`))
	if err != nil {
		return err
	}
	req.Header = http.Header{"Ce-Specversion": {"1.0"}, "Ce-Id": {"bench-resync"}, "Ce-Type": {"dev.knative.sources.ping"},
		"Ce-Source": {"/apis/v1/namespaces/" + localenv.Namespace + "/pingsources/" + localenv.Foo.PingSource}, "Content-Type": {"application/json"}}
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
	if res.ResyncMs = ms(time.Since(start)); resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the ping resync was answered %d", resp.StatusCode)
	}
	after, err := requestCounts(ctx, r.kube)
	res.Resync = delta(before, after)
	return err
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux this runs on.
const clockTicks = 100

// rss returns a process's resident, peak and anonymous (not file-backed) memory in MiB.
func rss(pid int) (now, peak, anon float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	kB := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			kB[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return kB["VmRSS:"] / 1024, kB["VmHWM:"] / 1024, kB["RssAnon:"] / 1024, err
}

// cpuSeconds returns the user and system CPU time a process has used.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// utime and stime: fields 14 and 15, 12 and 13 after the name (which may hold spaces).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks, nil
}

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

// Package otlp is a real consumer of OpenTelemetry's OTLP/HTTP metrics
// protocol for tests: an endpoint that decodes what exporters push (with
// the OpenTelemetry protocol's own generated types) and keeps the latest
// value of every series.
package otlp

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver receives OTLP/HTTP metrics (protobuf) on 127.0.0.1.
type Receiver struct {
	// URL is the metrics endpoint: an exporter's metrics-endpoint.
	URL string

	srv *http.Server
	mu  sync.Mutex
	// series holds each series' latest value: a sum's value, a gauge's, a
	// histogram's count. By Series.
	series map[string]float64
	// sums holds each histogram series' latest sum.
	sums map[string]float64
	// exports counts the requests received.
	exports int
}

// Start starts a Receiver; Close stops it.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/v1/metrics"}
	r.Reset()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", r.export)
	r.srv = &http.Server{Handler: mux}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() error { return r.srv.Close() }

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.exports++
	for _, rm := range in.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, p := range m.GetSum().GetDataPoints() {
					r.series[Series(m.GetName(), p.GetAttributes())] = p.GetAsDouble() + float64(p.GetAsInt())
				}
				for _, p := range m.GetGauge().GetDataPoints() {
					r.series[Series(m.GetName(), p.GetAttributes())] = p.GetAsDouble() + float64(p.GetAsInt())
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					r.series[Series(m.GetName(), p.GetAttributes())] = float64(p.GetCount())
					r.sums[Series(m.GetName(), p.GetAttributes())] = p.GetSum()
				}
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Series names a series: "name{k=v,...}", attributes sorted by key.
func Series(name string, attrs []*commonpb.KeyValue) string {
	kv := make([]string, 0, len(attrs))
	for _, a := range attrs {
		kv = append(kv, a.GetKey()+"="+value(a.GetValue()))
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	default:
		return v.String()
	}
}

// Reset forgets what was received.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series, r.sums, r.exports = map[string]float64{}, map[string]float64{}, 0
}

// Sum adds up the latest values of the series of metric name whose
// attributes include match (every key, that value), and says whether there
// was any. A histogram's value is its count.
func (r *Receiver) Sum(name string, match map[string]string) (float64, bool) {
	return r.add(r.series, name, match)
}

// HistogramSum adds up the sums of the histogram series of metric name
// whose attributes include match.
func (r *Receiver) HistogramSum(name string, match map[string]string) float64 {
	v, _ := r.add(r.sums, name, match)
	return v
}

// Values returns the latest value of every series of metric name, by its
// attributes ("k=v,...").
func (r *Receiver) Values(name string) map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]float64{}
	for s, v := range r.series {
		if n, attrs, _ := strings.Cut(s, "{"); n == name {
			out[strings.TrimSuffix(attrs, "}")] = v
		}
	}
	return out
}

func (r *Receiver) add(series map[string]float64, name string, match map[string]string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total, found := 0.0, false
	for s, v := range series {
		n, attrs, _ := strings.Cut(s, "{")
		if n != name {
			continue
		}
		set := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(attrs, "}"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				set[k] = v
			}
		}
		ok := true
		for k, v := range match {
			ok = ok && set[k] == v
		}
		if ok {
			total += v
			found = true
		}
	}
	return total, found
}

// Exports returns how many exports were received.
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

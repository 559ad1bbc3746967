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

package serverless

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	k8stoolmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
	"knative.dev/pkg/controller"
	k8smetrics "knative.dev/pkg/observability/metrics/k8s"
	"knative.dev/pkg/observability/resource"
	k8sruntime "knative.dev/pkg/observability/runtime"
	"knative.dev/pkg/system"
)

// observabilityConfigMap is Knative's ConfigMap of observability settings.
const observabilityConfigMap = "config-observability"

// ObservabilityConfig is what config-observability says of metrics and
// profiling: the keys knative.dev/pkg's observability config reads, as Main
// takes them.
type ObservabilityConfig struct {
	// Protocol is http/protobuf (OTLP over HTTP) or none. Knative's grpc and
	// prometheus are refused: a pod that scales to zero cannot be scraped,
	// and OTLP over HTTP reaches every collector that gRPC does. (Not
	// parsing with knative.dev/pkg/observability keeps its gRPC and
	// Prometheus exporters, and their init, out of the binary: a few
	// milliseconds of every cold start.)
	Protocol string
	// Endpoint is the OTLP endpoint's URL (…/v1/metrics).
	Endpoint string
	// ExportInterval is how often metrics are pushed; the exporter's default
	// (60s) when zero. The last are pushed at shutdown whatever it is.
	ExportInterval time.Duration
	// Profiling (runtime-profiling: enabled) serves net/http/pprof on
	// PROFILING_PORT (8008 by default), as Knative's components do.
	Profiling bool
}

// ParseObservabilityConfig reads a config-observability ConfigMap's data as
// Main does, and says what Main would refuse (a config test can ask it).
func ParseObservabilityConfig(data map[string]string) (ObservabilityConfig, error) {
	c := ObservabilityConfig{Protocol: "none", Endpoint: data["metrics-endpoint"]}
	rt, err := k8sruntime.NewFromMap(data)
	if err != nil {
		return c, fmt.Errorf("runtime-profiling: %w", err)
	}
	c.Profiling = rt.ProfilingEnabled()
	if p := data["metrics-protocol"]; p != "" {
		c.Protocol = p
	}
	if v := data["metrics-export-interval"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("bad metrics-export-interval %q", v)
		}
		c.ExportInterval = d
	}
	switch c.Protocol {
	case "none":
		if c.Endpoint != "" {
			return c, fmt.Errorf("metrics-endpoint is set, but metrics-protocol is none")
		}
	case "http/protobuf":
		if _, err := url.Parse(c.Endpoint); err != nil || c.Endpoint == "" {
			return c, fmt.Errorf("metrics-protocol http/protobuf needs a metrics-endpoint URL, not %q", c.Endpoint)
		}
	default:
		return c, fmt.Errorf("metrics-protocol %q is not supported here: http/protobuf (OTLP over HTTP) or none", c.Protocol)
	}
	return c, nil
}

// readObservabilityConfig reads config-observability in namespace; no
// ConfigMap: metrics and profiling off.
func readObservabilityConfig(ctx context.Context, kc kubernetes.Interface, namespace string) (ObservabilityConfig, error) {
	cm, err := kc.CoreV1().ConfigMaps(namespace).Get(ctx, observabilityConfigMap, metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		cm, err = &corev1.ConfigMap{}, nil
	}
	if err != nil {
		return ObservabilityConfig{}, fmt.Errorf("failed to read configmap %s/%s: %w", namespace, observabilityConfigMap, err)
	}
	c, err := ParseObservabilityConfig(cm.Data)
	if err != nil {
		return c, fmt.Errorf("configmap %s/%s: %w", namespace, observabilityConfigMap, err)
	}
	return c, nil
}

// setupMetrics sets up what knative.dev/pkg's
// sharedmain.SetupObservabilityOrDie does for metrics, with cfg: the global
// meter provider, the workqueue's metrics (kn.workqueue.*) and the API
// client's (kn.k8s.client.*). OTEL_EXPORTER_OTLP_ENDPOINT (or
// _METRICS_ENDPOINT) and OTEL_METRIC_EXPORT_INTERVAL in the environment
// override cfg, as in Knative. Call it before any controller is built, and
// the returned shutdown on exit: it exports what is left, so that a pod
// scaling to zero loses none.
func setupMetrics(ctx context.Context, cfg ObservabilityConfig, namespace, name string) (shutdown func(context.Context) error, _ error) {
	if cfg.Protocol != "http/protobuf" {
		return func(context.Context) error { return nil }, nil
	}
	var opts []otlpmetrichttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(cfg.Endpoint))
	}
	exporter, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to set up the metrics exporter: %w", err)
	}
	var readerOpts []sdkmetric.PeriodicReaderOption
	if os.Getenv("OTEL_METRIC_EXPORT_INTERVAL") == "" && cfg.ExportInterval > 0 {
		readerOpts = append(readerOpts, sdkmetric.WithInterval(cfg.ExportInterval))
	}
	// knative.dev/pkg names the namespace in the metrics' resource from the
	// environment (system.Namespace, which panics without it).
	if err := os.Setenv(system.NamespaceEnvKey, namespace); err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter, readerOpts...)),
		sdkmetric.WithResource(resource.Default(name)))
	otel.SetMeterProvider(mp)
	wq, err := k8smetrics.NewWorkqueueMetricsProvider(k8smetrics.WithMeterProvider(mp))
	if err != nil {
		return nil, fmt.Errorf("failed to set up the workqueue's metrics: %w", err)
	}
	workqueue.SetProvider(wq)
	controller.SetMetricsProvider(wq)
	clientMetrics, err := k8smetrics.NewClientMetricProvider(k8smetrics.WithMeterProvider(mp))
	if err != nil {
		return nil, fmt.Errorf("failed to set up the API client's metrics: %w", err)
	}
	k8stoolmetrics.Register(k8stoolmetrics.RegisterOpts{
		RequestLatency: clientMetrics.RequestLatencyMetric(),
		RequestResult:  clientMetrics.RequestResultMetric(),
	})
	return mp.Shutdown, nil
}

// serveProfiling serves knative.dev/pkg's profiling handler, enabled, on
// host (every interface when empty) and PROFILING_PORT (8008 by default),
// until stop. As in Knative, a port it cannot listen on is only logged.
func serveProfiling(host string, logger *zap.SugaredLogger) (stop func()) {
	ps := k8sruntime.NewProfilingServer()
	ps.SetEnabled(true)
	if _, port, err := net.SplitHostPort(ps.Addr); err == nil {
		ps.Addr = net.JoinHostPort(host, port)
	}
	ln, err := net.Listen("tcp", ps.Addr)
	if err != nil {
		logger.Warnw("Profiling is enabled but cannot listen", zap.Error(err))
		return func() {}
	}
	logger.Infow("Serving net/http/pprof", "address", ln.Addr().String())
	go func() { _ = ps.Serve(ln) }()
	return func() { _ = ps.Close() }
}

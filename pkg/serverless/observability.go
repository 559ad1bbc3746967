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

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	k8stoolmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/observability"
	o11yconfigmap "knative.dev/pkg/observability/configmap"
	"knative.dev/pkg/observability/metrics"
	k8smetrics "knative.dev/pkg/observability/metrics/k8s"
	"knative.dev/pkg/observability/resource"
)

// setupMetrics configures OpenTelemetry's metrics from the
// config-observability ConfigMap of namespace (metrics-protocol,
// metrics-endpoint, metrics-export-interval; OTEL_EXPORTER_OTLP_* in the
// environment override them), as knative.dev/pkg's
// sharedmain.SetupObservabilityOrDie does, with the same providers: the
// global meter provider, the workqueue's metrics (kn.workqueue.*) and the
// API client's (kn.k8s.client.*). It does not link sharedmain, which would
// bring some 200 packages (webhooks, leader election, informers) into a
// binary whose cold start is what users buy. Without a namespace, or
// without the ConfigMap, metrics are off ("none"). Call it before any
// controller is built, and the returned shutdown on exit: it exports what
// is left, so that a pod scaling to zero loses none.
func setupMetrics(ctx context.Context, kc kubernetes.Interface, namespace, name string) (shutdown func(context.Context) error, _ error) {
	cfg := observability.DefaultConfig()
	if namespace != "" {
		cm, err := kc.CoreV1().ConfigMaps(namespace).Get(ctx, o11yconfigmap.Name(), metav1.GetOptions{})
		switch {
		case apierrs.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("failed to read configmap %s/%s: %w", namespace, o11yconfigmap.Name(), err)
		default:
			if cfg, err = o11yconfigmap.Parse(cm); err != nil {
				return nil, fmt.Errorf("bad configmap %s/%s: %w", namespace, cm.Name, err)
			}
		}
	}
	mp, err := metrics.NewMeterProvider(ctx, cfg.Metrics, sdkmetric.WithResource(resource.Default(name)))
	if err != nil {
		return nil, fmt.Errorf("failed to set up metrics: %w", err)
	}
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

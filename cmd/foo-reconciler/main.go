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

// Command foo-reconciler is the Foo operator's reconciler as a Knative
// Service: it receives CloudEvents from ApiServerSource and PingSource on
// $PORT, reconciles the Foos they concern and answers each event once that is
// done. It starts no informer, no ConfigMap watch and no leader election, so
// that a cold start is short and an idle pod can be scaled to zero.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/signals"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless/uncached"

	kubeclient "knative.dev/pkg/client/injection/kube/client"
)

// Defaults of the API client's rate limit: client-go's own (5/s, burst 10)
// would make a burst of events wait on the client rather than the server.
// The reconciler is idle, or at zero, most of the time; when it runs, it has
// work queued.
const (
	defaultQPS   = 200
	defaultBurst = 400
)

func main() {
	var (
		opts        receiver.Options
		maxFailures int
		logLevel    string
		ack         string
	)
	flag.StringVar(&ack, "ack", envString("ACK", "reconciled"),
		"When to answer an event: reconciled (once its keys are reconciled) or queued (once enqueued; direct wiring under bursts, with the cold-start resync on) (env ACK).")
	flag.StringVar(&logLevel, "log-level", envString("LOG_LEVEL", "info"), "Log level: debug, info, warn or error (env LOG_LEVEL).")
	flag.IntVar(&opts.Port, "port", envInt("PORT", receiver.DefaultPort), "Port to receive events and probes on (env PORT).")
	flag.Int64Var(&opts.MaxBodyBytes, "max-body-bytes", receiver.DefaultMaxBodyBytes, "Largest event body accepted; bigger ones are answered 413.")
	flag.Int64Var(&opts.MaxInflightBytes, "max-inflight-bytes", receiver.DefaultMaxInflightBytes,
		"Bytes of event bodies held at once (it also caps max-body-bytes); an event waits for room until its deadline, then is answered 503.")
	flag.IntVar(&opts.MaxInflightEvents, "max-inflight-events", receiver.DefaultMaxInflightEvents, "Events handled at once; more are answered 503 at once.")
	flag.IntVar(&opts.MaxConnections, "max-connections", receiver.DefaultMaxConnections,
		"Connections open at once, idle ones included; more wait to be accepted. Keep it above max-inflight-events and the Service's containerConcurrency.")
	flag.DurationVar(&opts.AckDeadline, "ack-deadline", envDuration("ACK_DEADLINE", receiver.DefaultAckDeadline),
		"How long an event waits for its reconciles before it is answered 503 (env ACK_DEADLINE). Keep it below the Service's timeoutSeconds.")
	flag.IntVar(&opts.Workers, "workers", receiver.DefaultWorkers, "Keys reconciled at once.")
	flag.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 0, "Longest drain on SIGTERM (default: ack-deadline + 10s).")
	flag.IntVar(&maxFailures, "max-failures", receiver.DefaultMaxFailures, "Failed reconciles of a key an event sits through (they are retried with backoff) before it is answered 503.")
	flag.BoolVar(&opts.ColdStartResync, "cold-start-resync", envBool("COLD_START_RESYNC", true), "Reconcile the Foos that need work when the process starts (env COLD_START_RESYNC).")
	// Parses the flags, with --kubeconfig (else in-cluster) and --kube-api-qps/--kube-api-burst.
	cfg := injection.ParseAndGetRESTConfigOrDie()
	if cfg.QPS == 0 {
		cfg.QPS = defaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = defaultBurst
	}
	cfg.UserAgent = foo.AgentName
	switch ack {
	case "reconciled":
	case "queued":
		opts.AckOnEnqueue = true
		if !opts.ColdStartResync {
			log.Fatal("--ack=queued needs the cold-start resync: it restores what a crash loses")
		}
	default:
		log.Fatalf("bad --ack %q: want reconciled or queued", ack)
	}

	logger, err := newLogger(logLevel)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = logger.Sync() }()
	ctx := logging.WithLogger(signals.NewContext(), logger)

	// The injection clients only: injection.Default.SetupInformers (and
	// sharedmain) would also build the informers that the generated packages
	// register.
	for _, inject := range injection.Default.GetClients() {
		ctx = inject(ctx, cfg)
	}

	writes := ownwrites.New(ownwrites.DefaultMax)
	tracker := receiver.NewTracker(foo.NewReconciler(ctx, writes), maxFailures)
	impl := foo.NewController(ctx, tracker)
	// Reads outlive SIGTERM: the events in flight are answered during the drain.
	readCtx := context.WithoutCancel(ctx)
	lister := foo.NewLister(fooclient.Get(ctx), kubeclient.Get(ctx))
	decoder := &receiver.Decoder{
		Owner:       samplesv1alpha1.Kind("Foo"),
		Deployments: uncached.NewDeploymentLister(readCtx, kubeclient.Get(ctx)),
		Claimants:   lister.Claimants,
		OwnWrites:   writes,
		SkipNoOp:    true,
	}
	srv := receiver.New(impl, tracker, decoder, lister.KeysNeedingWork, opts)
	if err := srv.Run(ctx, nil); err != nil {
		logger.Fatalw("Receiver failed", zap.Error(err))
	}
}

func newLogger(level string) (*zap.SugaredLogger, error) {
	lvl := zapcore.InfoLevel
	if level != "" {
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("bad LOG_LEVEL %q: %w", level, err)
		}
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.EncoderConfig.TimeKey = "timestamp"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	l, err := cfg.Build()
	if err != nil {
		return nil, err
	}
	return l.Named(foo.AgentName).Sugar(), nil
}

func envString(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, ok := os.LookupEnv(key); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			log.Fatalf("bad %s %q: %v", key, v, err)
		}
		return n
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(key); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			log.Fatalf("bad %s %q: %v", key, v, err)
		}
		return d
	}
	return def
}

func envBool(key string, def bool) bool {
	if v, ok := os.LookupEnv(key); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			log.Fatalf("bad %s %q: %v", key, v, err)
		}
		return b
	}
	return def
}

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
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/signals"

	"github.com/frugal-operator/foo-operator/pkg/serverless/auth"
	"github.com/frugal-operator/foo-operator/pkg/serverless/buckets"
	"github.com/frugal-operator/foo-operator/pkg/serverless/configwatch"
	"github.com/frugal-operator/foo-operator/pkg/serverless/handoff"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
	"github.com/frugal-operator/foo-operator/pkg/serverless/requeue"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

// Defaults of the API client's rate limit: client-go's own (5/s, burst 10)
// would make a burst of events wait on the client rather than the server.
// The reconciler is idle, or at zero, most of the time; when it runs, it has
// work queued.
const (
	defaultQPS   = 200
	defaultBurst = 400
)

// correlatorKeys bounds what the event recorder remembers (see eventRecorder).
const correlatorKeys = 256

// env holds the settings that the environment gives (a Knative Service's
// env and PORT); flags override them.
type env struct {
	Ack             string        `envconfig:"ACK" default:"reconciled"`
	LogLevel        string        `envconfig:"LOG_LEVEL" default:"info"`
	Port            int           `envconfig:"PORT" default:"8080"`
	AckDeadline     time.Duration `envconfig:"ACK_DEADLINE" default:"30s"`
	ColdStartResync bool          `envconfig:"COLD_START_RESYNC" default:"true"`
	SystemNamespace string        `envconfig:"SYSTEM_NAMESPACE"`
	Namespace       string        `envconfig:"WATCH_NAMESPACE"`
	OIDCAudience    string        `envconfig:"OIDC_AUDIENCE"`
	OIDCSubjects    []string      `envconfig:"OIDC_SUBJECTS"`
	OIDCDiscovery   string        `envconfig:"OIDC_DISCOVERY_BASE_URL"`
	RequeueSchedule string        `envconfig:"REQUEUE_SCHEDULE"`
	Buckets         int           `envconfig:"BUCKETS"`
	// KService is the Knative Service the process serves (Knative Serving
	// sets it).
	KService string `envconfig:"K_SERVICE"`
}

// Main runs op until SIGTERM or SIGINT, then drains; it exits the process
// on a bad setting or a failure to serve.
func Main(op Operator) {
	var e env
	if err := envconfig.Process("", &e); err != nil {
		log.Fatal(err)
	}
	set := registerFlags(flag.CommandLine, e, op.Name)
	// Parses the flags, with --kubeconfig (else in-cluster) and --kube-api-qps/--kube-api-burst.
	cfg := injection.ParseAndGetRESTConfigOrDie()
	if cfg.QPS == 0 {
		cfg.QPS = defaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = defaultBurst
	}
	cfg.UserAgent = op.Name
	// The resync's lists and dry runs neither record nor hand off.
	resyncCfg := rest.CopyConfig(cfg)
	// The objects the clients write, recognised when their events come.
	writes := ownwrites.New(ownwrites.DefaultMax)
	cfg.Wrap(writes.Transport)
	// What the events of an authenticated in-order sender hand off (none
	// without sender authentication), read by the clients' GETs.
	var handoffs *handoff.Store
	if op.HandOff {
		handoffs = handoff.New(handoff.DefaultMaxBytes)
		cfg.Wrap(handoffs.Transport(op.Owner.Resource))
	}
	opts, err := set.options()
	if err != nil {
		log.Fatal(err)
	}
	later, err := set.requeueSchedule(resyncCfg, e.KService)
	if err != nil {
		log.Fatal(err)
	}
	spread, err := set.spread(resyncCfg, op.Name)
	if err != nil {
		log.Fatal(err)
	}
	if spread != nil {
		opts.Spread = spread
	}
	oidc := set.oidc
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(set.logLevel)); err != nil {
		log.Fatalf("bad --log-level %q: %v", set.logLevel, err)
	}
	logger, _ := logging.NewLogger("", level.String())
	logger = logger.Named(op.Name)
	defer func() { _ = logger.Sync() }()

	ctx := logging.WithLogger(signals.NewContext(), logger)
	// The injection clients only: injection.Default.SetupInformers (and
	// sharedmain) would also build the informers that the generated packages
	// register.
	for _, inject := range injection.Default.GetClients() {
		ctx = inject(ctx, cfg)
	}
	// What is read of the API server before serving, at once.
	var (
		obs = ObservabilityConfig{Protocol: "none"}
		g   errgroup.Group
	)
	if set.systemNamespace != "" {
		g.Go(func() (err error) {
			obs, err = readObservabilityConfig(ctx, kubeclient.Get(ctx), set.systemNamespace)
			return err
		})
	}
	if oidc.Audience != "" {
		g.Go(func() error {
			v, err := auth.New(ctx, cfg, *oidc)
			if err == nil {
				opts.Verifier = v
			}
			return err
		})
	}
	if later != nil {
		g.Go(func() error { return later.Load(ctx) })
	}
	if err := g.Wait(); err != nil {
		logger.Fatalw("Failed to start", zap.Error(err))
	}
	shutdownMetrics, err := setupMetrics(ctx, obs, set.systemNamespace, op.Name)
	if err != nil {
		logger.Fatalw("Failed to set up metrics", zap.Error(err))
	}
	if obs.Profiling {
		defer serveProfiling(set.host, logger)()
	}
	partsCtx := context.WithoutCancel(ctx)
	if set.namespace != "" {
		partsCtx = injection.WithNamespaceScope(partsCtx, set.namespace)
	}
	partsCtx = controller.WithEventRecorder(partsCtx, eventRecorder(kubeclient.Get(ctx).CoreV1(), op))

	cmw := configwatch.New(kubeclient.Get(ctx).CoreV1(), set.systemNamespace)
	parts := op.New(withDucks(partsCtx), cmw)
	if err := op.check(parts); err != nil {
		logger.Fatalw("Refused the operator", zap.Error(err))
	}
	tracked := &trackers{}
	tracked.add(parts.Tracker)
	rs, err := resync.New(partsCtx, resyncCfg, op.ResyncKinds(), func(ctx context.Context) controller.Reconciler {
		dry := op.New(withDucks(ctx), cmw)
		tracked.add(dry.Tracker)
		return dry.Reconciler
	})
	if err != nil {
		logger.Fatalw("Failed to set up the resync", zap.Error(err))
	}
	if err := cmw.Start(ctx.Done()); err != nil {
		logger.Fatalw("Failed to read the configuration", zap.Error(err))
	}
	// Owned objects are read for their metadata only, neither recorded nor
	// handed off.
	owned, err := metadata.NewForConfig(resyncCfg)
	if err != nil {
		logger.Fatalw("Failed to set up the reads of owned objects", zap.Error(err))
	}
	decoder := &receiver.Decoder{Owner: op.Owner.GroupKind(), Owned: op.receiverOwned(owned, parts), Settled: parts.Settled,
		OwnWrites: writes, SkipNoOp: true, Handoff: handoffs, Tracked: op.trackedKinds(), Observers: tracked.observers, ResyncOn: op.resyncOn(),
		Namespace: set.namespace}
	if op.FollowConfig {
		decoder.Configs = cmw
	}
	lister := inNamespace(set.namespace, rs.KeysNeedingWork)
	stopLater := func() {}
	if later != nil {
		// The keys due run with every resync; the schedule is written as the
		// reconciles change it, the drain's included.
		lister, opts.Later = later.Lister(lister), later
		laterCtx, cancel := context.WithCancel(partsCtx)
		done := make(chan struct{})
		go func() { later.Run(laterCtx); close(done) }()
		stopLater = func() { cancel(); <-done }
	}
	stopSpread := func() {}
	if spread != nil {
		// At SIGTERM the buckets are released as soon as the reconciles
		// running end: the events waiting here for other keys of theirs are
		// sent on to the new holders, and the drain does not hold them.
		spreadCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { spread.Run(spreadCtx); close(done) }()
		stopSpread = func() { cancel(); <-done }
		logger.Infow("Sharing the keys", zap.Int("buckets", set.buckets), zap.String("identity", spread.Identity()))
	}
	srv := receiver.New(partsCtx, parts.Reconciler, decoder, lister, *opts)
	err = srv.Run(ctx, nil)
	stopSpread()
	stopLater()
	// The last metrics are exported before the process goes.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := shutdownMetrics(flushCtx); err != nil {
		logger.Warnw("Failed to export the last metrics", zap.Error(err))
	}
	if err != nil {
		logger.Fatalw("Receiver failed", zap.Error(err))
	}
}

// settings are what the flags and the environment set; the flags are
// read when the FlagSet is parsed.
type settings struct {
	opts                           *receiver.Options
	oidc                           *auth.Config
	ack, logLevel, systemNamespace string
	namespace                      string
	host                           string
	requeue                        string
	buckets                        int
	advertise                      string
}

// registerFlags defines the flags on fs, defaulting to e's settings.
func registerFlags(fs *flag.FlagSet, e env, name string) *settings {
	set := &settings{opts: &receiver.Options{Name: name},
		oidc: &auth.Config{Audience: e.OIDCAudience, Subjects: e.OIDCSubjects, DiscoveryBaseURL: e.OIDCDiscovery}}
	opts := set.opts
	fs.StringVar(&set.ack, "ack", e.Ack,
		"When to answer an event: reconciled (once its keys are reconciled) or queued (once enqueued; direct wiring under bursts, with the cold-start resync on) (env ACK).")
	fs.StringVar(&set.logLevel, "log-level", e.LogLevel, "Log level: debug, info, warn or error (env LOG_LEVEL).")
	fs.StringVar(&set.systemNamespace, "system-namespace", e.SystemNamespace,
		"Namespace of the config-observability ConfigMap that configures metrics and profiling; none: both off (env SYSTEM_NAMESPACE).")
	fs.StringVar(&set.namespace, "namespace", e.Namespace,
		"Reconcile the owners of this namespace only: the resyncs list it alone, and events of owners elsewhere are ignored; empty: every namespace (env WATCH_NAMESPACE).")
	fs.StringVar(&set.oidc.Audience, "oidc-audience", set.oidc.Audience,
		"Admit only requests with an OIDC token for this audience, the sink's (Knative Eventing's authentication-oidc); empty: every sender (env OIDC_AUDIENCE).")
	fs.Func("oidc-subjects", "Comma-separated subjects admitted with -oidc-audience: the sources' and the broker's OIDC service accounts (env OIDC_SUBJECTS).",
		func(v string) error { set.oidc.Subjects = strings.Split(v, ","); return nil })
	fs.StringVar(&set.oidc.DiscoveryBaseURL, "oidc-discovery-base-url", set.oidc.DiscoveryBaseURL,
		"The tokens' issuer, when not the API server: where it publishes its OIDC discovery (env OIDC_DISCOVERY_BASE_URL).")
	fs.IntVar(&opts.Port, "port", e.Port, "Port to receive events and probes on (env PORT).")
	fs.StringVar(&set.host, "host", "", "Interface to listen on, the profiling port's too; empty: every interface, as in a pod.")
	fs.Int64Var(&opts.MaxBodyBytes, "max-body-bytes", receiver.DefaultMaxBodyBytes, "Largest event body accepted; bigger ones are answered 413.")
	fs.Int64Var(&opts.MaxInflightBytes, "max-inflight-bytes", receiver.DefaultMaxInflightBytes,
		"Bytes of event bodies held at once (it also caps max-body-bytes); an event waits for room until its deadline, then is answered 503.")
	fs.IntVar(&opts.MaxInflightEvents, "max-inflight-events", receiver.DefaultMaxInflightEvents, "Events handled at once; more are answered 503 at once.")
	fs.IntVar(&opts.MaxConnections, "max-connections", receiver.DefaultMaxConnections,
		"Connections open at once; at the cap a new one replaces the one idle longest once it has been silent 5 s, and waits until then. Keep it above max-inflight-events and the Service's containerConcurrency.")
	fs.DurationVar(&opts.AckDeadline, "ack-deadline", e.AckDeadline,
		"How long an event waits for its reconciles before it is answered 503 (env ACK_DEADLINE). Keep it below the Service's timeoutSeconds.")
	fs.IntVar(&opts.Workers, "workers", receiver.DefaultWorkers, "Keys reconciled at once.")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 0, "Longest drain on SIGTERM (default: ack-deadline + 10s).")
	fs.IntVar(&opts.MaxFailures, "max-failures", receiver.DefaultMaxFailures,
		"Failed reconciles of a key an event sits through (they are retried with backoff) before it is answered 503.")
	requeue := e.RequeueSchedule
	if requeue == "" && e.KService != "" {
		requeue = e.KService + "-requeue"
	}
	fs.StringVar(&set.requeue, "requeue-schedule", requeue,
		"PingSource, in the system namespace, that keeps the keys a reconcile asked to run again later and pings the Knative Service (K_SERVICE) when they are due; none: only the workqueue requeues them, while the process lives (env REQUEUE_SCHEDULE; default <K_SERVICE>-requeue in a Knative Service, else none).")
	fs.IntVar(&set.buckets, "buckets", e.Buckets,
		"Buckets the keys are hashed into, each held by one process through a Lease in the system namespace, so that several pods of the Service share the work and each key is reconciled in one at a time; 0: this process reconciles every key, for a Service of at most one pod (env BUCKETS).")
	fs.StringVar(&set.advertise, "advertise-address", "",
		"Where the other processes send this one the keys it holds, with --buckets: host:port (default: the address this process reaches the API server from, and --port).")
	fs.BoolVar(&opts.ColdStartResync, "cold-start-resync", e.ColdStartResync,
		"Reconcile the owners that need work when the process starts (env COLD_START_RESYNC).")
	return set
}

// options returns the receiver's options once the flags are parsed: the
// acknowledgement mode set, and the address to listen on.
func (s *settings) options() (*receiver.Options, error) {
	if s.host != "" {
		s.opts.Address = net.JoinHostPort(s.host, strconv.Itoa(s.opts.Port))
	}
	if s.buckets > 0 && s.systemNamespace == "" {
		return nil, fmt.Errorf("--buckets needs --system-namespace: where the Leases are kept")
	}
	return s.opts, s.setAck()
}

// requeueSchedule returns the requeue schedule the flags ask for, if any,
// read and written with cfg, pinging the Knative Service kservice.
func (s *settings) requeueSchedule(cfg *rest.Config, kservice string) (*requeue.Schedule, error) {
	if s.requeue == "" || s.requeue == "none" {
		return nil, nil
	}
	if kservice == "" || s.systemNamespace == "" {
		return nil, fmt.Errorf("--requeue-schedule %s needs K_SERVICE (the Knative Service it pings) and --system-namespace (where it is kept)", s.requeue)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return requeue.New(client.Resource(requeue.Resource).Namespace(s.systemNamespace), s.requeue, kservice), nil
}

// spread returns the buckets the flags ask for, if any, their Leases read
// and written with cfg.
func (s *settings) spread(cfg *rest.Config, name string) (*buckets.Set, error) {
	if s.buckets <= 0 {
		return nil, nil
	}
	addr := s.advertise
	if addr == "" {
		host := s.host
		if host == "" {
			ip, err := outboundIP(cfg.Host)
			if err != nil {
				return nil, fmt.Errorf("--buckets: %w; set --advertise-address", err)
			}
			host = ip.String()
		}
		addr = net.JoinHostPort(host, strconv.Itoa(s.opts.Port))
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return buckets.New(buckets.Config{Leases: kube.CoordinationV1(), Namespace: s.systemNamespace, Name: name,
		Buckets: s.buckets, Identity: addr})
}

// outboundIP returns the address this process reaches the API server
// from: a pod's own IP.
func outboundIP(apiServer string) (net.IP, error) {
	if !strings.Contains(apiServer, "://") {
		apiServer = "https://" + apiServer
	}
	u, err := url.Parse(apiServer)
	if err != nil {
		return nil, fmt.Errorf("bad API server address %q: %w", apiServer, err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	// Nothing is sent: a UDP socket's connect only picks the route.
	conn, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("no route to the API server %s: %w", u.Host, err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP, nil
}

// inNamespace returns list, asked for namespace only when it is set: a
// resync of every namespace lists namespace alone, one of some namespaces
// lists those that are namespace.
func inNamespace(namespace string, list receiver.KeyLister) receiver.KeyLister {
	if namespace == "" {
		return list
	}
	return func(ctx context.Context, namespaces ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
		if len(namespaces) > 0 && !slices.Contains(namespaces, namespace) {
			return nil, nil, nil
		}
		return list(ctx, namespace)
	}
}

// setAck sets the receiver's acknowledgement mode.
func (s *settings) setAck() error {
	opts := s.opts
	switch s.ack {
	case "reconciled":
	case "queued":
		opts.AckOnEnqueue = true
		if s.buckets > 0 {
			return fmt.Errorf("--ack=queued is for one process; --buckets shares the keys among several")
		}
		if !opts.ColdStartResync {
			return fmt.Errorf("--ack=queued needs the cold-start resync: it restores what a crash loses")
		}
	default:
		return fmt.Errorf("bad --ack %q: want reconciled or queued", s.ack)
	}
	return nil
}

// eventRecorder returns a recorder writing Kubernetes events through the
// API server, as op's component. It is never stopped: it records the events
// of the drain's reconciles too. Its correlator (which folds repeats of an
// event into a count) remembers the last correlatorKeys events, not
// client-go's 4096: after a burst of 1000 Foos, its three caches held 2 MB
// of a 7 MB live heap, and a process that scales to zero after 30 idle
// seconds forgets them all anyway.
func eventRecorder(events typedcorev1.EventsGetter, op Operator) record.EventRecorder {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: correlatorKeys}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	return b.NewRecorder(op.Scheme, corev1.EventSource{Component: op.Name})
}

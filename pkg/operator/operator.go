package operator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/overlay"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/settings"
)

// launchNoticeTTL is how long a NodeClaim the provisioner created counts as a launch on its way to the cloud
// provider's launch window (which waits for such launches four seconds at most).
const launchNoticeTTL = time.Minute

// DefaultNamespace is the controller's namespace when POD_NAMESPACE is not set (where its leader Lease lives
// unless LEADER_ELECTION_NAMESPACE says otherwise).
const DefaultNamespace = "kube-system"

// Options are what Run needs besides settings; zero values mean production defaults.
type Options struct {
	// Getenv reads POD_NAMESPACE (default os.Getenv via the caller).
	Getenv func(string) string
	// RestConfig is the API server connection; nil means ctrl.GetConfig (KUBECONFIG or in-cluster).
	RestConfig *rest.Config
	// LogWriter receives the logs (default stderr) when Logger is not set.
	LogWriter io.Writer
	// SkipControllerNameValidation lets a test run the controller more than once in one process:
	// controller-runtime checks controller names for uniqueness process-wide, so a second Run would be refused.
	SkipControllerNameValidation bool
	// Logger is the logger to use; the zero value means NewLogger(settings.LogLevel, LogWriter).
	Logger logr.Logger
}

// SetGlobalLoggers routes controller-runtime's and client-go's (klog) process-wide loggers to logger. Call it
// once at start, before any client is used (cmd/dovetail does); Run does not, so tests can run it concurrently.
func SetGlobalLoggers(logger logr.Logger) {
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
}

// NewLogger returns a JSON zap logger at the settings' level, its values applied when a line is written
// (DeferValues).
func NewLogger(level string, w io.Writer) logr.Logger {
	opts := []zap.Opts{zap.Level(zapLevel(level))}
	if w != nil {
		opts = append(opts, zap.WriteTo(w))
	}
	return DeferValues(zap.New(opts...))
}

// zapLevel is the zap level of a LOG_LEVEL value (info for anything else).
func zapLevel(level string) zapcore.Level {
	switch level {
	case "debug":
		return zapcore.DebugLevel
	case "warn":
		return zapcore.WarnLevel
	case "error":
		return zapcore.ErrorLevel
	}
	return zapcore.InfoLevel
}

// NewScheme returns the scheme with core Kubernetes, karpenter.sh/v1, karpenter.sh/v1alpha1 and karpenter.k8s.aws/v1 types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, s *settings.Settings, opts Options) error {
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = NewLogger(s.LogLevel, opts.LogWriter)
	}
	ctx = log.IntoContext(ctx, logger)

	cfg := opts.RestConfig
	if cfg == nil {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("loading Kubernetes client configuration (KUBECONFIG or in-cluster): %w", err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(s.KubeClientQPS), s.KubeClientBurst
	cfg.UserAgent = "dovetail"

	// The run's own metrics live in a registry of its own, served on /metrics together with controller-runtime's
	// process-wide one (its controller, workqueue and client metrics, Go and process collectors): a second run in
	// one process (tests) starts with fresh series instead of sharing, or failing to register, the first's.
	// metrics.Registry writes the per-node and per-pod families of a scrape from their entries.
	reg := metrics.NewRegistry()
	mgr, watch, err := newManager(cfg, s, opts.Getenv, opts.SkipControllerNameValidation, reg)
	if err != nil {
		return err
	}
	d, err := NewDeps(ctx, mgr, cfg, s, reg)
	if err != nil {
		return err
	}
	d.Namespace = controllerNamespace(opts.Getenv)
	defer forwardKubeRequests(d.Metrics)()
	watch.Logger = logger.WithName("leader-lease")
	watch.Recorder = d.Recorder
	watch.Waiting = d.Metrics.LeaderElectionWaiting
	if err := mgr.Add(watch); err != nil {
		return fmt.Errorf("adding the leader-lease watch: %w", err)
	}
	if err := controllers.Register(ctx, mgr, d); err != nil {
		return err
	}
	logger.Info("starting dovetail", "cluster-name", s.ClusterName, "cloud-provider", d.CloudProvider.Name(),
		"leader-election", !s.DisableLeaderElection, "lease", watch.Namespace+"/"+watch.Name, "identity", watch.Identity,
		"metrics-port", s.MetricsPort, "health-probe-port", s.HealthProbePort)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// controllerNamespace is POD_NAMESPACE, or DefaultNamespace when it is not set.
func controllerNamespace(getenv func(string) string) string {
	if getenv != nil && getenv("POD_NAMESPACE") != "" {
		return getenv("POD_NAMESPACE")
	}
	return DefaultNamespace
}

// NewManager builds the controller-runtime manager: scheme, leader election, probes, metrics, field indexes.
// Run also adds the returned LeaseWatch, which the leader-election lock waits on, to the manager.
// reg holds the run's metrics (see NewDeps); /metrics serves it with controller-runtime's registry.
func NewManager(cfg *rest.Config, s *settings.Settings, getenv func(string) string, reg prometheus.Gatherer) (manager.Manager, *LeaseWatch, error) {
	return newManager(cfg, s, getenv, false, reg)
}

// leaderLease returns the leader Lease's namespace and name: LEADER_ELECTION_NAMESPACE (else the controller's
// namespace) and LEADER_ELECTION_NAME.
func leaderLease(s *settings.Settings, getenv func(string) string) (string, string, error) {
	if s.LeaderElectionName == "" {
		return "", "", fmt.Errorf("LEADER_ELECTION_NAME (--leader-election-name) must not be empty")
	}
	ns := s.LeaderElectionNamespace
	if ns == "" {
		ns = controllerNamespace(getenv)
	}
	return ns, s.LeaderElectionName, nil
}

func newManager(cfg *rest.Config, s *settings.Settings, getenv func(string) string, skipNameValidation bool, reg prometheus.Gatherer) (manager.Manager, *LeaseWatch, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	namespace := controllerNamespace(getenv)
	leaseNamespace, leaseName, err := leaderLease(s, getenv)
	if err != nil {
		return nil, nil, err
	}
	identity, err := newIdentity()
	if err != nil {
		return nil, nil, err
	}
	watch := &LeaseWatch{Identity: identity, Name: leaseName, Namespace: leaseNamespace, LegacyNamespace: namespace,
		LeaderElection: !s.DisableLeaderElection, Clock: clock.RealClock{}, Interval: leaseWatchInterval}
	events := &recorderRef{}
	var lock resourcelock.Interface
	if !s.DisableLeaderElection {
		if lock, err = newLeaderLock(cfg, leaseNamespace, leaseName, identity, watch, events); err != nil {
			return nil, nil, err
		}
	}
	metricsOpts := metricsserver.Options{BindAddress: fmt.Sprintf(":%d", s.MetricsPort), FilterProvider: servedMetrics(reg)}
	if s.EnableProfiling {
		metricsOpts.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index),
			"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
			"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The informer caches keep what the controllers read: no managedFields, no last-applied copies, trimmed
		// pods and nodes (see TransformForCache), whose repeated values are shared (see NewCacheTransform).
		Cache:                  cache.Options{DefaultTransform: NewCacheTransform()},
		Metrics:                metricsOpts,
		HealthProbeBindAddress: fmt.Sprintf(":%d", s.HealthProbePort),
		// The Lease is Karpenter's (LEADER_ELECTION_NAME, LEADER_ELECTION_NAMESPACE), taken with a lock that waits
		// on other autoscalers' Leases first (gatedLock) and names this replica "dovetail_<host>_<uuid>"; it is
		// released on shutdown, as Karpenter releases it, so the other side takes over at once.
		LeaderElection:                      !s.DisableLeaderElection,
		LeaderElectionID:                    leaseName,
		LeaderElectionNamespace:             leaseNamespace,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionReleaseOnCancel:       true,
		Controller:                          controllerConfig(s, skipNameValidation),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	events.set(mgr.GetEventRecorderFor(identity))
	watch.Reader = mgr.GetAPIReader()
	watch.Elected = mgr.Elected()
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding ready check: %w", err)
	}
	if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, nil, err
	}
	return mgr, watch, nil
}

// controllerConfig is the controllers' shared configuration. Warm-up (DISABLE_CONTROLLER_WARMUP=false) starts
// the controllers' watches before the leader lease is won, so a standby replica has full caches when it takes
// over; it means nothing without leader election.
func controllerConfig(s *settings.Settings, skipNameValidation bool) config.Controller {
	warmup := !s.DisableLeaderElection && !s.DisableControllerWarmup
	return config.Controller{SkipNameValidation: &skipNameValidation, EnableWarmup: &warmup}
}

// NewDeps builds the shared controller dependencies: clients, clock, recorder, metrics and the instrumented
// cloud provider (which needs the cluster UID, read before the manager starts).
// The metrics are registered with reg, the run's own registry.
func NewDeps(ctx context.Context, mgr manager.Manager, cfg *rest.Config, s *settings.Settings, reg prometheus.Registerer) (deps.Deps, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return deps.Deps{}, fmt.Errorf("creating Kubernetes clientset: %w", err)
	}
	uid, err := ClusterUID(ctx, mgr.GetAPIReader())
	if err != nil {
		return deps.Deps{}, err
	}
	m, err := metrics.New(reg)
	if err != nil {
		return deps.Deps{}, err
	}
	clk := clock.RealClock{}
	notices := cloudprovider.NewLaunchNotices(clk, launchNoticeTTL)
	cp, err := newCloudProvider(ctx, cloudProviderOptions{Settings: s, ClusterUID: uid, Reader: mgr.GetClient(), Clock: clk,
		OnThrottle: func(service, operation string) {
			m.CloudProviderThrottledCalls.WithLabelValues(service, operation).Inc()
		}, OnCall: func(c sdk.Call) {
			attempts := make([]metrics.AWSAttempt, len(c.Attempts))
			for i, a := range c.Attempts {
				attempts[i] = metrics.AWSAttempt{Code: a.Code, Duration: a.Duration}
			}
			m.ObserveAWSCall(c.Service, c.Operation, c.Code, c.Duration, attempts)
		}, OnBatch: m.ObserveBatch, OnLaunchFailure: m.CountLaunchFailure, OnTerminationFailure: m.CountTerminationFailure,
		OnUserData: m.SetUserDataBytes, OnNodeClassTemplatesDeleted: m.DeleteUserDataBytes, LaunchNotices: notices, Kube: kube})
	if err != nil {
		return deps.Deps{}, err
	}
	queue, err := newInterruptionQueue(cp, s)
	if err != nil {
		return deps.Deps{}, err
	}
	conflicts, _ := cp.(cloudprovider.NameConflictDetector)
	refused, _ := cp.(cloudprovider.UnavailableOfferingsLister)
	var overlays *overlay.Store
	served := cp
	if s.FeatureEnabled(settings.FeatureNodeOverlay) {
		// Every GetInstanceTypes caller sees overlaid instance types; the provider's own launch path too.
		overlays = overlay.NewStore()
		if o, ok := cp.(interface {
			SetInstanceTypeOverlay(cloudprovider.InstanceTypeOverlay)
		}); ok {
			o.SetInstanceTypeOverlay(overlays)
		}
		served = overlay.Wrap(cp, overlays)
	}
	var buffers *deps.Buffers
	if s.FeatureEnabled(settings.FeatureCapacityBuffer) {
		buffers = deps.NewBuffers()
	}
	var deviceModels *devices.Source
	if !s.IgnoreDRARequests {
		cat, err := catalog.Load()
		if err != nil {
			return deps.Deps{}, fmt.Errorf("loading the instance type catalog for DRA device models: %w", err)
		}
		deviceModels = devices.NewSource(cat, s.AWSFeatureEnabled(settings.AWSFeatureDRANVIDIAGPU), s.AWSFeatureEnabled(settings.AWSFeatureDRAEFA))
	}
	d := deps.Deps{
		DeviceModels:         deviceModels,
		NameConflicts:        conflicts,
		UnavailableOfferings: refused,
		Namespace:            DefaultNamespace,
		Buffers:              buffers,
		Client:               mgr.GetClient(),
		Cache:                mgr.GetCache(),
		APIReader:            mgr.GetAPIReader(),
		LaunchNotices:        notices,
		KubeClient:           kube,
		CloudProvider:        metrics.Instrument(served, m),
		Overlays:             overlays,
		Clock:                clk,
		Recorder:             mgr.GetEventRecorderFor("dovetail"),
		Settings:             s,
		Metrics:              m,
		InterruptionQueue:    queue,
		Plans:                deps.NewPlans(),
		RegistrationHealth:   deps.NewRegistrationHealth(),
	}
	// EC2 instance status checks (interruption.instancestatus).
	d.InstanceStatus, _ = cp.(cloudprovider.InstanceStatusLister)
	// Memory capacity learned from registered nodes (node.capacity).
	d.CapacityLearner, _ = cp.(cloudprovider.CapacityLearner)
	return d, nil
}

// ClusterUID returns the UID of the kube-system namespace, which identifies the cluster for the cloud provider.
func ClusterUID(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system namespace for the cluster UID: %w", err)
	}
	if ns.UID == "" {
		return "", fmt.Errorf("the kube-system namespace has no UID")
	}
	return string(ns.UID), nil
}

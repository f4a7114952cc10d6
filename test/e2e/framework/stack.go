// Package framework starts and drives Dovetail's local stack (control plane, AWS simulator, controller) for the
// end-to-end tests and the demo: process management through the hack/ scripts, clients, polling helpers and a
// summary of what the controller launched.
package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// Region is the simulated region the local stack runs in.
const Region = "us-west-2"

// Options say where a stack keeps its state and which ports it uses.
type Options struct {
	// StateDir holds the cluster's and the stack's state, logs and pid files.
	StateDir string
	// PortBase is the first of the block of loopback ports the stack uses (see hack/cluster-common.sh).
	PortBase int
	// ControllerEnv are extra environment variables for the controller, e.g. "BATCH_IDLE_DURATION=500ms".
	ControllerEnv []string
	// SimulatorFlags are extra flags for `awssim serve`.
	SimulatorFlags []string
	// ClusterName is the CLUSTER_NAME of the controller and the simulated EKS cluster; default "dovetail".
	ClusterName string
	// NoController starts the stack without Dovetail's controller (StartController starts it later), for tests
	// that run another controller, such as Karpenter's (StartKarpenter), on the stack.
	NoController bool
	// SharedSimulator is the endpoint of a simulator another stack runs; this stack then starts none of its own
	// and SimulatorFlags are ignored (see UpPair).
	SharedSimulator string
	// KubeSchedulerConfig is YAML added to the local kube-scheduler's KubeSchedulerConfiguration, e.g. profiles
	// with podTopologySpread default constraints.
	KubeSchedulerConfig string
}

// Stack is a running local stack and clients for it.
type Stack struct {
	Options
	RepoRoot    string
	Kubeconfig  string
	AWSEndpoint string
	RESTConfig  *rest.Config
	Client      client.Client
	Kube        kubernetes.Interface
	EC2         *ec2.Client
}

// RepoRoot is the repository's root folder, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Scheme returns a scheme with core Kubernetes types and Dovetail's kinds.
func Scheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (o Options) env() []string {
	env := append(os.Environ(),
		"DOVETAIL_STATE="+o.StateDir,
		"DOVETAIL_PORT_BASE="+strconv.Itoa(o.PortBase),
		// The caller's DOVETAIL_ENV (e.g. LOG_LEVEL=debug or GOGC=50 for one bench run) comes before the test's own.
		"DOVETAIL_ENV="+strings.Join(append(strings.Fields(os.Getenv("DOVETAIL_ENV")), o.ControllerEnv...), " "),
		"AWSSIM_FLAGS="+strings.Join(o.SimulatorFlags, " "),
	)
	if o.ClusterName != "" {
		env = append(env, "CLUSTER_NAME="+o.ClusterName)
	}
	if o.SharedSimulator != "" {
		env = append(env, "AWSSIM_SHARED_ENDPOINT="+o.SharedSimulator)
	}
	if o.NoController {
		env = append(env, "DOVETAIL_CONTROLLER=none")
	}
	if o.KubeSchedulerConfig != "" {
		env = append(env, "DOVETAIL_KUBE_SCHEDULER_CONFIG="+o.KubeSchedulerConfig)
	}
	return env
}

// Up starts the stack with hack/stack-up.sh (binaries from bin/, built by `make build`) and connects to it.
// On error it leaves the processes to Down, so callers should call Down even when Up fails.
func Up(ctx context.Context, opts Options) (*Stack, error) {
	if opts.ClusterName == "" {
		opts.ClusterName = "dovetail"
	}
	s := &Stack{Options: opts, RepoRoot: RepoRoot()}
	if err := s.script(ctx, "stack-up.sh"); err != nil {
		return s, err
	}
	s.Kubeconfig = filepath.Join(opts.StateDir, "cluster", "kubeconfig")
	s.AWSEndpoint = fmt.Sprintf("http://127.0.0.1:%d", opts.PortBase+66)
	if opts.SharedSimulator != "" {
		s.AWSEndpoint = opts.SharedSimulator
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return s, fmt.Errorf("reading kubeconfig %s: %w", s.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	s.RESTConfig = cfg
	scheme, err := Scheme()
	if err != nil {
		return s, err
	}
	if s.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return s, fmt.Errorf("building client: %w", err)
	}
	if s.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return s, fmt.Errorf("building clientset: %w", err)
	}
	s.EC2 = ec2.New(ec2.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.AWSEndpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("123456789012", "local-simulator", ""),
		// The controller's HTTP client (see sdk.NewHTTPClient): the simulator answers faster than the SDK's own
		// would survive.
		HTTPClient: sdk.NewHTTPClient(nil),
	})
	return s, nil
}

// Down stops every process the stack started and removes its state.
func (s *Stack) Down(ctx context.Context) error {
	return s.script(ctx, "stack-down.sh")
}

func (s *Stack) script(ctx context.Context, name string, extraEnv ...string) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(s.RepoRoot, "hack", name))
	// Later entries win: extraEnv overrides the stack's own settings.
	cmd.Env = append(s.env(), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/%s: %w\n%s", name, err, out.String())
	}
	return nil
}

// LogTail returns the last n lines of a stack component's log: "dovetail", "awssim", or a control-plane
// component such as "kube-apiserver".
func (s *Stack) LogTail(component string, n int) string {
	paths := []string{
		filepath.Join(s.StateDir, "stack", "logs", component+".log"),
		filepath.Join(s.StateDir, "cluster", "logs", component+".log"),
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		return strings.Join(lines, "\n")
	}
	return "(no log for " + component + ")"
}

// Poll calls cond every interval until it reports done, returns an error, or timeout passes. On timeout the
// error includes the last status cond reported, so a failing test says what it was waiting for.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func(ctx context.Context) (done bool, status string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	last, lastErr := "", error(nil)
	for {
		done, status, err := cond(ctx)
		// Errors are treated as "not yet": API calls can fail transiently (and the client's rate limiter refuses
		// to wait past the deadline, so the last poll often fails); the last status read without an error is
		// reported on timeout, with the last error after it.
		if err != nil {
			lastErr, done = err, false
		} else if status != "" {
			last = status
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("timed out after %s; last status: %s (last error: %w)", timeout, last, lastErr)
			}
			return fmt.Errorf("timed out after %s; last status: %s", timeout, last)
		case <-ticker.C:
		}
	}
}

const (
	defaultWait  = time.Minute
	pollInterval = 250 * time.Millisecond
)

// ClusterUp runs hack/cluster-up.sh again for this stack's state folder and ports; it must leave a healthy
// running cluster as it is.
func (s *Stack) ClusterUp(ctx context.Context) error { return s.script(ctx, "cluster-up.sh") }

// Consistently calls check every interval for the whole duration and returns its first error: it asserts that
// something stays true for a while (for example that an instance is not terminated while a volume is attached).
func Consistently(ctx context.Context, duration, interval time.Duration, check func(ctx context.Context) error) error {
	// The checks get the caller's context, not one that expires with the window: a client refuses calls that
	// would outlive their context's deadline, which would read as a failed check at the end of the window.
	end := time.Now().Add(duration)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := check(ctx); err != nil {
			return err
		}
		if !time.Now().Before(end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// Command dovetail-demo drives `make demo` once the local stack is up: it applies the example NodePool,
// EC2NodeClass and Deployment, shows progress until every pod is Running, and prints what Dovetail launched.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root := framework.RepoRoot()
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the local cluster")
	nodePool := flag.String("nodepool", filepath.Join(root, "examples", "nodepool.yaml"), "NodePool and EC2NodeClass manifest")
	workload := flag.String("workload", filepath.Join(root, "examples", "inflate.yaml"), "workload manifest")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for every pod to be Running")
	flag.Parse()
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig (or KUBECONFIG) is required")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig: %w", err)
	}
	scheme, err := framework.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}

	fmt.Printf("==> applying %s\n", rel(root, *nodePool))
	if err := framework.ApplyFile(ctx, c, *nodePool); err != nil {
		return err
	}
	objs, err := framework.ReadObjects(*workload)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *workload, err)
	}
	fmt.Printf("==> applying %s\n", rel(root, *workload))
	start := time.Now()
	if err := framework.Apply(ctx, c, objs...); err != nil {
		return err
	}

	fmt.Println("==> waiting for every pod to be Running (Dovetail batches pending pods, launches instances in the AWS simulator, kwok runs them as Nodes)")
	last := ""
	var progress framework.Progress
	err = framework.Poll(ctx, *timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, c, "default", client.MatchingLabels{"app": "inflate"})
		if err != nil {
			return false, err.Error(), nil // the API server may be briefly busy; keep polling
		}
		progress = p
		if line := p.String(); line != last {
			fmt.Printf("  [%5.1fs] %s\n", time.Since(start).Seconds(), line)
			last = line
		}
		return p.Done(), p.String(), nil
	})
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("not every pod became Running: %w\n(controller log: %s)", err,
			filepath.Join(filepath.Dir(filepath.Dir(*kubeconfig)), "stack", "logs", "dovetail.log"))
	}

	summary, err := framework.Summarize(ctx, c, framework.Region)
	if err != nil {
		return err
	}
	noun := "nodes"
	if summary.Nodes == 1 {
		noun = "node"
	}
	fmt.Printf("\n==> %d/%d pods Running %.1fs after apply, on %d new %s\n\n", progress.PodsRunning, progress.Pods, elapsed.Seconds(), summary.Nodes, noun)
	summary.Print(os.Stdout)
	fmt.Printf(`
The stack keeps running. Try:
  export KUBECONFIG=%s
  %s get nodeclaims,nodes
  bin/awssim instances --endpoint $AWSSIM_ENDPOINT      (after: source %s)
  make demo-down                                        (stops everything and removes the state)
`, *kubeconfig, "kubectl", filepath.Join(filepath.Dir(filepath.Dir(*kubeconfig)), "stack", "env"))
	return nil
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

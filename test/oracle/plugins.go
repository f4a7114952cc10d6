package oracle

import (
	"context"

	"fmt"
	corev1 "k8s.io/api/core/v1"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodename"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumerestrictions"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumezone"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// parallelism is the number of workers the plugins' PreFilter loops use (kube-scheduler's default is 16; the
// oracle runs on small machines).
const parallelism = 2

// factory builds one upstream plugin with its default arguments.
type factory struct {
	name string
	new  func(ctx context.Context, args runtime.Object, h framework.Handle, fts feature.Features) (framework.Plugin, error)
	// args is the plugin's versioned (v1) argument type, defaulted as kube-scheduler defaults it; nil for none.
	args func() runtime.Object
}

// filters are the kube-scheduler's default filter plugins in its default order, less DynamicResources (no
// ResourceClaims in a snapshot).
var filters = []factory{
	{nodeunschedulable.Name, nodeunschedulable.New, nil},
	{nodename.Name, nodename.New, nil},
	{tainttoleration.Name, tainttoleration.New, nil},
	{nodeaffinity.Name, nodeaffinity.New, func() runtime.Object { return &configv1.NodeAffinityArgs{} }},
	{nodeports.Name, nodeports.New, nil},
	{noderesources.Name, noderesources.NewFit, func() runtime.Object { return &configv1.NodeResourcesFitArgs{} }},
	{volumerestrictions.Name, volumerestrictions.New, nil},
	{nodevolumelimits.CSIName, nodevolumelimits.NewCSI, nil},
	{volumebinding.Name, volumebinding.New, func() runtime.Object { return &configv1.VolumeBindingArgs{} }},
	{volumezone.Name, volumezone.New, nil},
	{podtopologyspread.Name, podtopologyspread.New, func() runtime.Object { return &configv1.PodTopologySpreadArgs{} }},
	{interpodaffinity.Name, interpodaffinity.New, func() runtime.Object { return &configv1.InterPodAffinityArgs{} }},
}

// defaultedArgs returns the internal, defaulted form of a plugin's v1 arguments, as kube-scheduler builds it from an
// empty KubeSchedulerConfiguration.
func defaultedArgs(f factory) (runtime.Object, error) {
	if f.args == nil {
		return nil, nil
	}
	v1 := f.args()
	scheme.Scheme.Default(v1)
	internal, err := scheme.Scheme.ConvertToVersion(v1, config.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("converting %s args: %w", f.name, err)
	}
	return internal, nil
}

// plugin is one built filter plugin; preFilter is nil when it has no PreFilter.
type plugin struct {
	name      string
	preFilter framework.PreFilterPlugin
	filter    framework.FilterPlugin
}

// newPlugins builds the filters on a framework handle whose shared lister is l and whose informers list the
// cluster's objects from a fake clientset. The informers are started only when a pod mounts a volume (the volume
// binder reads claims and volumes through informer events); otherwise the objects are put straight into the
// informers' stores. Cancel ctx to stop the informers.
func newPlugins(ctx context.Context, c *cluster, l framework.SharedLister, defaultSpread []corev1.TopologySpreadConstraint) ([]plugin, error) {
	// the plugins' parallel loops report to the scheduler's metrics, which must exist (Register runs once)
	metrics.Register()
	client := fake.NewClientset(c.objects...)
	inf := informers.NewSharedInformerFactory(client, 0)
	h, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(l), frameworkruntime.WithInformerFactory(inf), frameworkruntime.WithClientSet(client),
		frameworkruntime.WithParallelism(parallelism))
	if err != nil {
		return nil, fmt.Errorf("building the framework handle: %w", err)
	}
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	var out []plugin
	for _, f := range filters {
		args, err := defaultedArgs(f)
		if err != nil {
			return nil, err
		}
		if a, ok := args.(*config.PodTopologySpreadArgs); ok && len(defaultSpread) > 0 {
			// as the kube-scheduler reads SCHEDULER_CONFIG's podTopologySpread section
			a.DefaultConstraints = defaultSpread
			a.DefaultingType = config.ListDefaulting
		}
		p, err := f.new(ctx, args, h, fts)
		if err != nil {
			return nil, fmt.Errorf("building plugin %s: %w", f.name, err)
		}
		pl := plugin{name: f.name}
		pl.preFilter, _ = p.(framework.PreFilterPlugin)
		if pl.filter, _ = p.(framework.FilterPlugin); pl.filter == nil {
			return nil, fmt.Errorf("plugin %s has no Filter", f.name)
		}
		out = append(out, pl)
	}
	// the plugins' informers exist now: fill them
	if c.hasVolumes {
		// informers.WaitForCacheSync polls every 100ms; these poll every millisecond
		synced := []cache.InformerSynced{inf.Core().V1().PersistentVolumeClaims().Informer().HasSynced,
			inf.Core().V1().PersistentVolumes().Informer().HasSynced, inf.Core().V1().Namespaces().Informer().HasSynced,
			inf.Storage().V1().StorageClasses().Informer().HasSynced, inf.Storage().V1().CSINodes().Informer().HasSynced}
		inf.Start(ctx.Done())
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, informerTimeout, true, func(context.Context) (bool, error) {
			for _, ok := range synced {
				if !ok() {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("informers did not sync: %w", err)
		}
		return out, nil
	}
	for _, o := range c.objects {
		if err := addToStore(inf, o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

package oracle

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// lister is the scheduler's snapshot of the cluster: one NodeInfo per node with its pods. While a pod is checked its
// node's NodeInfo is swapped for one without it, so the affinity lists are computed on every call.
type lister struct {
	list   []fwk.NodeInfo
	byName map[string]*framework.NodeInfo
	// index is each node's position in list; full holds the NodeInfos with every pod.
	index map[string]int
	full  map[string]*framework.NodeInfo
}

var _ framework.SharedLister = &lister{}

func newLister(c *cluster) *lister {
	l := &lister{byName: map[string]*framework.NodeInfo{}, index: map[string]int{}, full: map[string]*framework.NodeInfo{}}
	for _, n := range c.nodes {
		ni := framework.NewNodeInfo(c.pods[n.Name]...)
		ni.SetNode(n)
		l.index[n.Name] = len(l.list)
		l.list = append(l.list, ni)
		l.byName[n.Name] = ni
		l.full[n.Name] = ni
	}
	return l
}

// without swaps the NodeInfo of p's node for a new one holding every other pod of the node (pods), and returns it.
// (A new NodeInfo rather than RemovePod: removing one of two pods that, wrongly, share a host port would free the
// port.)
func (l *lister) without(p *corev1.Pod, pods []*corev1.Pod) *framework.NodeInfo {
	name := p.Spec.NodeName
	ni := framework.NewNodeInfo()
	for _, q := range pods {
		if q != p {
			ni.AddPod(q)
		}
	}
	ni.SetNode(l.full[name].Node())
	l.list[l.index[name]] = ni
	l.byName[name] = ni
	return ni
}

// restore puts back the full NodeInfo of node name.
func (l *lister) restore(name string) {
	l.list[l.index[name]] = l.full[name]
	l.byName[name] = l.full[name]
}

// replace makes n with pods the full NodeInfo of n's name and returns the one it replaces.
func (l *lister) replace(n *corev1.Node, pods []*corev1.Pod) *framework.NodeInfo {
	old := l.full[n.Name]
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	l.full[n.Name] = ni
	l.restore(n.Name)
	return old
}

// put makes ni the full NodeInfo of its node again.
func (l *lister) put(ni *framework.NodeInfo) {
	l.full[ni.Node().Name] = ni
	l.restore(ni.Node().Name)
}

func (l *lister) NodeInfos() framework.NodeInfoLister       { return l }
func (l *lister) StorageInfos() framework.StorageInfoLister { return l }

func (l *lister) List() ([]fwk.NodeInfo, error) { return l.list, nil }

func (l *lister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	var out []fwk.NodeInfo
	for _, ni := range l.list {
		if len(ni.GetPodsWithAffinity()) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}

func (l *lister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	var out []fwk.NodeInfo
	for _, ni := range l.list {
		if len(ni.GetPodsWithRequiredAntiAffinity()) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}

func (l *lister) Get(name string) (fwk.NodeInfo, error) {
	ni, ok := l.byName[name]
	if !ok {
		return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
	}
	return ni, nil
}

// IsPVCUsedByPods tells whether a pod in the cluster uses the claim "namespace/name".
func (l *lister) IsPVCUsedByPods(key string) bool {
	for _, ni := range l.list {
		if ni.GetPVCRefCounts()[key] > 0 {
			return true
		}
	}
	return false
}

// addToStore puts an object straight into the store of the informer that lists its kind.
func addToStore(inf informers.SharedInformerFactory, o runtime.Object) error {
	var err error
	switch x := o.(type) {
	case *corev1.PersistentVolumeClaim:
		err = inf.Core().V1().PersistentVolumeClaims().Informer().GetStore().Add(x)
	case *corev1.PersistentVolume:
		err = inf.Core().V1().PersistentVolumes().Informer().GetStore().Add(x)
	case *corev1.Namespace:
		err = inf.Core().V1().Namespaces().Informer().GetStore().Add(x)
	case *storagev1.StorageClass:
		err = inf.Storage().V1().StorageClasses().Informer().GetStore().Add(x)
	case *storagev1.CSINode:
		err = inf.Storage().V1().CSINodes().Informer().GetStore().Add(x)
	case *corev1.Service:
		err = inf.Core().V1().Services().Informer().GetStore().Add(x)
	case *corev1.ReplicationController:
		err = inf.Core().V1().ReplicationControllers().Informer().GetStore().Add(x)
	case *appsv1.ReplicaSet:
		err = inf.Apps().V1().ReplicaSets().Informer().GetStore().Add(x)
	case *appsv1.StatefulSet:
		err = inf.Apps().V1().StatefulSets().Informer().GetStore().Add(x)
	default:
		return fmt.Errorf("no informer for %T", o)
	}
	if err != nil {
		return fmt.Errorf("adding %T to its informer: %w", o, err)
	}
	return nil
}

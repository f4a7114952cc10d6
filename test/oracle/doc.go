// Package oracle checks scheduling plans with the upstream kube-scheduler's own filter plugins: every planned
// placement must pass PreFilter and Filter of NodeResourcesFit, NodeAffinity, NodeName, NodeUnschedulable,
// TaintToleration, NodePorts, PodTopologySpread, InterPodAffinity, VolumeBinding, VolumeZone, VolumeRestrictions and
// NodeVolumeLimits on the cluster the plan produces. It is a nested module so the main module never depends on
// k8s.io/kubernetes. See docs/oracle.md.
package oracle

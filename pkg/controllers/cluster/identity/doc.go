// Package identity warns when another cluster uses this cluster's name in the same cloud account: every minute
// it asks the cloud provider for resources tagged with the cluster name but another cluster's UID, sets the
// dovetail_cluster_name_conflicts gauge to the number of such clusters, and records one Warning event
// (ClusterNameConflict, on the kube-system Namespace) per other cluster the first time it is seen. Dovetail never
// acts on those resources; the warning tells the operator that cost reports, limits and tag-scoped IAM policies
// keyed on the name alone cannot tell the two clusters apart.
package identity

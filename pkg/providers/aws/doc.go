// Package aws is Dovetail's AWS cloud provider: it implements cloudprovider.CloudProvider on EC2 (CreateFleet,
// DescribeInstances, TerminateInstances), resolves EC2NodeClasses for the node class controller and tags every
// resource with the cluster's name and unique identity. Subpackages hold the parts; this package wires them.
package aws

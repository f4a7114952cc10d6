// Package cloudprovider defines the contract between Dovetail's controllers and a cloud: the CloudProvider
// interface, the instance types and offerings it reports, and the typed errors callers branch on.
// It holds no cloud-specific code; the AWS implementation lives in pkg/providers/aws.
package cloudprovider

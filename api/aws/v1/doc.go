// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, which tells Dovetail how to launch EC2
// instances (subnets, security groups, AMIs, IAM role, kubelet settings, volumes), and the AWS-specific
// well-known labels, annotations, tags and condition names. Names follow Karpenter's AWS provider v1.
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1

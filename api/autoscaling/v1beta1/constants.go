package v1beta1

// ActiveCapacityStrategy is the default provisioning strategy: keep nodes with room for the buffer's pods.
const ActiveCapacityStrategy = "buffer.x-k8s.io/active-capacity"

// Condition types a CapacityBuffer's status carries, as upstream names them.
const (
	// ConditionReadyForProvisioning is True when the buffer's pod shape and count were resolved.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning is True when the buffer's pods fit on existing capacity, False while new capacity is
	// needed for them (or the buffer cannot be provisioned; the reason says which).
	ConditionProvisioning = "Provisioning"
)

// Reasons on the ReadyForProvisioning condition.
const (
	ReasonResolved            = "Resolved"
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	ReasonResolutionFailed    = "ResolutionFailed"
	// ReasonUnsupportedStrategy is Dovetail's: a provisioningStrategy other than active-capacity is not acted on.
	ReasonUnsupportedStrategy = "UnsupportedProvisioningStrategy"
	// ReasonFeatureGateDisabled is Dovetail's: FEATURE_GATES has CapacityBuffer=false, so buffers are ignored.
	ReasonFeatureGateDisabled = "FeatureGateDisabled"
)

// Reasons on the Provisioning condition.
const (
	ReasonFitsExistingCapacity    = "FitsExistingCapacity"
	ReasonRequiresNewCapacity     = "RequiresNewCapacity"
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	ReasonBufferEmpty             = "BufferEmpty"
)

// Kinds a scalableRef may name (API group "apps").
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
)

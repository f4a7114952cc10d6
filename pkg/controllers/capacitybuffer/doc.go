// Package capacitybuffer runs the CapacityBuffer controller (FEATURE_GATES CapacityBuffer=true): it resolves each
// buffer's pod shape (a PodTemplate, or the template of the Deployment, StatefulSet or ReplicaSet its
// scalableRef names), writes the buffer's status (ReadyForProvisioning, replicas, podTemplateRef/generation) and
// hands the buffer's virtual pods to the provisioner through deps.Buffers.
package capacitybuffer

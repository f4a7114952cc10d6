package v1

// TerminationFinalizer is put on NodeClaims and the Nodes launched for them; it is removed once the instance
// is terminated and the node drained.
const TerminationFinalizer = Group + "/termination"

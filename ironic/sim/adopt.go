package sim

// Adoption, Ironic's verb for a node deployed outside Ironic: from
// manageable the node goes through "adopting" to "active" without a
// deployment (with fake interfaces, at once). Real Ironic validates the
// node's boot and deploy interfaces first; the fake ones always pass.
func init() {
	provisionTransitions[[2]string{"manageable", "adopt"}] = struct{ via, to string }{"", "active"}
	provisionTransitions[[2]string{"adopt failed", "adopt"}] = struct{ via, to string }{"", "active"}
	provisionTransitions[[2]string{"adopt failed", "manage"}] = struct{ via, to string }{"", "manageable"}
}

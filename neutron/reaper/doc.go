// Package reaper is the leader's reaper of Neutron ports whose server is
// gone: the one exception, with the Ironic reaper (ironic/mirror), to the
// rule that only a server's owner, after an intent at its epoch, takes a
// Neutron side effect. A port corral created (description
// neutron.CreatedByCorral) whose device is no live server of the
// replicated state is deleted; a user's port still bound to a deleted
// server is given back, as its owner would have. Each only after the
// leader has seen it so, unchanged, for a grace, and only at the revision
// it saw (Neutron's If-Match), so that a port someone changed meanwhile is
// looked at again instead.
//
// It reads the state through the Cluster interface it declares and Neutron
// through its Neutron interface (*neutron.Client implements it): it never
// imports corral's api, cluster or compute packages, nor the virt driver.
package reaper

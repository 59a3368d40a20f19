package netem

import "errors"

// ErrNoIptables says the machine cannot run partitions.
var ErrNoIptables = errors.New("partitions need root and iptables (apt-get install iptables)")

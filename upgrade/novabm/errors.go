package novabm

import "errors"

// Errors of this package; test with errors.Is.
var (
	// ErrBadURL: a connection string that is not one nova.conf could hold.
	ErrBadURL = errors.New("bad database connection string")
	// ErrUnreadable: the database cannot be opened or read.
	ErrUnreadable = errors.New("database cannot be read")
	// ErrSchema: a table or column the migration needs is missing.
	ErrSchema = errors.New("database schema is not a Nova baremetal schema")
)

// ErrNoSuchFlavor: --flavor names a flavor that neither corral nor the
// imported nova flavors have.
var ErrNoSuchFlavor = errors.New("no such flavor")

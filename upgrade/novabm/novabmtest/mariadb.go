package novabmtest

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/go-sql-driver/mysql"
)

var identRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// MariaDB creates, in the server whose root logs in through socket (as
// scripts/mariadb-up.sh starts it), a database and a user with rights on
// it alone, reachable over TCP at addr (host:port). It returns the
// connection string an operator would have written in nova.conf, and a
// root connection to the new database to fill it.
func MariaDB(ctx context.Context, socket, addr, dbName, user, password string) (string, *sql.DB, error) {
	if !identRE.MatchString(dbName) || !identRE.MatchString(user) {
		return "", nil, fmt.Errorf("database and user names must match %s", identRE)
	}
	root := mysql.NewConfig()
	root.User, root.Net, root.Addr = "root", "unix", socket
	admin, err := sql.Open("mysql", root.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	defer admin.Close()
	host, _, _ := splitHostPort(addr)
	for _, stmt := range []string{
		"DROP DATABASE IF EXISTS " + dbName,
		"CREATE DATABASE " + dbName,
		fmt.Sprintf("DROP USER IF EXISTS '%s'@'%s'", user, host),
		fmt.Sprintf("CREATE USER '%s'@'%s' IDENTIFIED BY '%s'", user, host, password),
		fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%s'", dbName, user, host),
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			return "", nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	root.DBName = dbName
	db, err := sql.Open("mysql", root.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("mysql+pymysql://%s:%s@%s/%s", user, password, addr, dbName), db, nil
}

func splitHostPort(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return addr, "", fmt.Errorf("%q has no port", addr)
}

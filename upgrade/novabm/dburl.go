// Package novabm brings a deployment of Nova's old baremetal driver
// (nova.virt.baremetal) over to Ironic and corral: it reads the nova_bm and
// nova databases, plans what each row becomes (an Ironic node with the same
// uuid and its ports; for a deployed instance, an adopted node with a
// backfilled allocation and a corral server ACTIVE on it), and carries the
// plan out idempotently, so that a run killed at any point can be resumed
// and a second full run changes nothing.
//
// Reading and planning are pure of side effects: a dry run stops after
// Plan and writes nothing anywhere.
package novabm

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DBURL is a parsed SQLAlchemy connection string, as operators wrote them in
// nova.conf ([baremetal] sql_connection, [database] connection).
type DBURL struct {
	Driver   string // "mysql" or "sqlite"
	DSN      string // for database/sql
	Redacted string // the string with the password hidden, for messages
	Path     string // sqlite: the file
}

// ParseDBURL accepts mysql://, mysql+pymysql://, mysql+mysqldb:// and
// sqlite:////absolute/path (sqlite:///relative/path) URLs.
func ParseDBURL(raw string) (DBURL, error) {
	raw = strings.TrimSpace(raw)
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return DBURL{}, fmt.Errorf("%w: %q has no scheme: use mysql+pymysql://USER:PASS@HOST:3306/DB or sqlite:////ABS/PATH", ErrBadURL, raw)
	}
	dialect, _, _ := strings.Cut(strings.ToLower(scheme), "+")
	switch dialect {
	case "sqlite":
		// SQLAlchemy: sqlite:///rel/path, sqlite:////abs/path; the query
		// (if any) is not for us.
		p, _, _ := strings.Cut(rest, "?")
		if !strings.HasPrefix(p, "/") || p == "/" {
			return DBURL{}, fmt.Errorf("%w: %q: a SQLite URL is sqlite:////ABSOLUTE/PATH (four slashes)", ErrBadURL, raw)
		}
		p = p[1:]
		v := url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(5000)"}}
		return DBURL{Driver: "sqlite", DSN: "file:" + p + "?" + v.Encode(), Redacted: raw, Path: p}, nil
	case "mysql", "mariadb":
		u, err := url.Parse("mysql://" + rest)
		if err != nil {
			return DBURL{}, fmt.Errorf("%w: %q: %v", ErrBadURL, redactURL(raw), err)
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" || strings.Contains(db, "/") {
			return DBURL{}, fmt.Errorf("%w: %q names no database: add /DBNAME after the host", ErrBadURL, redactURL(raw))
		}
		if u.Host == "" {
			return DBURL{}, fmt.Errorf("%w: %q names no host", ErrBadURL, redactURL(raw))
		}
		cfg := mysql.NewConfig()
		cfg.DBName = db
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr = u.Host + ":3306"
		}
		q := u.Query()
		if sock := q.Get("unix_socket"); sock != "" {
			cfg.Net, cfg.Addr = "unix", sock
		}
		cfg.Timeout, cfg.ReadTimeout = 10*time.Second, 60*time.Second
		cfg.Params = map[string]string{"charset": "utf8mb4"}
		if cs := q.Get("charset"); cs != "" {
			cfg.Params["charset"] = cs
		}
		return DBURL{Driver: "mysql", DSN: cfg.FormatDSN(), Redacted: redactURL(raw)}, nil
	}
	return DBURL{}, fmt.Errorf("%w: %q: scheme %q is not supported: use mysql, mysql+pymysql or sqlite", ErrBadURL, redactURL(raw), scheme)
}

// redactURL hides the password of a URL.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	cred := rest[:at]
	if user, _, has := strings.Cut(cred, ":"); has {
		cred = user + ":***"
	}
	return scheme + "://" + cred + rest[at:]
}

// Open opens the database read-only (SQLite) or for reads (MySQL: only
// SELECTs are sent) and checks that it answers.
func Open(ctx context.Context, u DBURL) (*sql.DB, error) {
	if u.Driver == "sqlite" {
		// SQLite would create a missing file: refuse first.
		if st, err := os.Stat(u.Path); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s: the SQLite file %s does not exist or is not a file", ErrUnreadable, u.Redacted, u.Path)
		}
	}
	db, err := sql.Open(u.Driver, u.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreadable, u.Redacted, err)
	}
	db.SetMaxOpenConns(2)
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreadable, u.Redacted, err)
	}
	return db, nil
}

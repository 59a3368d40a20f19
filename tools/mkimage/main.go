// Command mkimage writes corral's OCI image without a container engine,
// a registry or a daemon: one layer built in memory from a static corral
// binary, Debian's CA certificates and the files below, as an OCI image
// layout (-oci, what a registry push sends) and a docker-archive tarball
// (-tar, what `podman load` and `docker load` read). Every timestamp is
// the epoch and every entry is written in one order, so the same inputs
// give the same digest.
//
//	go run ./mkimage -bin ../bin/corral-static -conf ../deploy/container/corral.conf \
//	    -version 0.1.0 -commit $(git rev-parse HEAD) -oci ../bin/image-oci -tar ../bin/corral-image.tar
//
// The image: /usr/local/bin/corral (the entrypoint; the command is `agent
// --config /etc/corral/corral.conf`), /etc/corral/corral.conf (a default
// that a mounted file replaces; the environment overrides either), the user
// corral (10001:10001) that runs it, /var/lib/corral (a volume owned by
// it), /tmp, /etc/passwd and /etc/group, and the health check `corral
// health`. docs/container.md describes the layout.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the agent runs as, and the image's fixed paths.
const (
	uid        = 10001
	binPath    = "usr/local/bin/corral"
	confPath   = "etc/corral/corral.conf"
	dataDir    = "var/lib/corral"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	sourceRepo = "https://github.com/corral-dev/corral"
)

var epoch = time.Unix(0, 0).UTC()

// entry is one file or directory of the layer.
type entry struct {
	name     string // without a leading slash; directories end in "/"
	mode     int64
	uid, gid int
	body     []byte
}

func main() {
	bin := flag.String("bin", "", "the static corral binary (CGO_ENABLED=0)")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA certificate bundle to ship")
	conf := flag.String("conf", "", "the default /etc/corral/corral.conf")
	version := flag.String("version", "devel", "corral's version: the tag's and the labels'")
	commit := flag.String("commit", "unknown", "the commit the binary was built from (a label)")
	repo := flag.String("repo", "localhost/corral", "the image's repository name")
	ociDir := flag.String("oci", "", "write an OCI image layout to this directory (replaced)")
	tarPath := flag.String("tar", "", "write a docker-archive tarball (podman load) to this file")
	digestPath := flag.String("digest", "", "write the manifest digest to this file")
	flag.Parse()
	if *bin == "" || *conf == "" || (*ociDir == "" && *tarPath == "") {
		fmt.Fprintln(os.Stderr, "mkimage: -bin, -conf and one of -oci or -tar are needed")
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*bin, *ca, *conf, *version, *commit, *repo, *ociDir, *tarPath, *digestPath); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(bin, ca, conf, version, commit, repo, ociDir, tarPath, digestPath string) error {
	files := map[string]string{binPath: bin, caPath: ca, confPath: conf}
	bodies := map[string][]byte{}
	for dst, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		bodies[dst] = b
	}
	if !isStatic(bodies[binPath]) {
		return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", bin)
	}
	entries := []entry{
		{name: binPath, mode: 0o755, body: bodies[binPath]},
		{name: caPath, mode: 0o644, body: bodies[caPath]},
		{name: confPath, mode: 0o644, body: bodies[confPath]},
		{name: "etc/passwd", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ncorral:x:%d:%d:corral peer:/var/lib/corral:/sbin/nologin\n", uid, uid))},
		{name: "etc/group", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\ncorral:x:%d:\n", uid))},
		{name: "tmp/", mode: 0o1777},
		{name: dataDir + "/", mode: 0o750, uid: uid, gid: uid},
	}
	layerTar, err := buildTar(entries)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "tools/mkimage", Comment: "corral " + version}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	labels := map[string]string{
		"org.opencontainers.image.title":       "corral",
		"org.opencontainers.image.description": "corral peer: a clustered compute host for OpenStack Ironic",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    commit,
		"org.opencontainers.image.source":      sourceRepo,
	}
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + binPath},
		Cmd:        []string{"agent", "--config", "/" + confPath},
		User:       fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir: "/" + dataDir,
		Volumes:    map[string]struct{}{"/" + dataDir: {}},
		ExposedPorts: map[string]struct{}{
			"7480/tcp": {},                 // API, /healthz, /readyz, /metrics
			"7481/tcp": {},                 // raft
			"7482/tcp": {}, "7482/udp": {}, // gossip
		},
		Env:        []string{"SSL_CERT_FILE=/" + caPath},
		Labels:     labels,
		StopSignal: "SIGTERM",
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", "/" + binPath, "health", "--config", "/" + confPath},
			Interval:    10 * time.Second,
			Timeout:     5 * time.Second,
			StartPeriod: 30 * time.Second,
			Retries:     3,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	tag := repo + ":" + tagOf(version)
	if ociDir != "" {
		if err := os.RemoveAll(ociDir); err != nil {
			return err
		}
		p, err := layout.Write(ociDir, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
		})); err != nil {
			return err
		}
	}
	if tarPath != "" {
		ref, err := name.NewTag(tag)
		if err != nil {
			return err
		}
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return err
		}
	}
	if digestPath != "" {
		if err := os.WriteFile(digestPath, []byte(digest.String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s %s\n", tag, digest)
	return nil
}

// tagOf makes a version a valid image tag: letters, digits, '_', '.' and
// '-' only ("0.1.0-dev+g1234" becomes "0.1.0-dev_g1234").
func tagOf(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, v)
}

// buildTar writes the entries, and every parent directory they need (0755,
// root's), sorted by name, with epoch timestamps.
func buildTar(entries []entry) ([]byte, error) {
	all := map[string]entry{}
	for _, e := range entries {
		all[e.name] = e
		for d := path.Dir(strings.TrimSuffix(e.name, "/")); d != "."; d = path.Dir(d) {
			if _, ok := all[d+"/"]; !ok {
				all[d+"/"] = entry{name: d + "/", mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := all[n]
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if e.uid == uid {
			h.Uname, h.Gname = "corral", "corral"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// isStatic reports whether an ELF binary asks for no dynamic loader (it
// has no PT_INTERP program header): a scratch image has none to give it.
func isStatic(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

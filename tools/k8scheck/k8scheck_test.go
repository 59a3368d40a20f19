// Package k8scheck checks corral's Kubernetes manifests offline: the Helm
// chart (deploy/helm/corral) is linted and rendered as `helm lint --strict`
// and `helm template` do, with its defaults and with the TLS example; every
// rendered object is decoded strictly into Kubernetes' typed API (an
// unknown or misspelt field fails) and validated against the OpenAPI
// schema of the Kubernetes release that k8s.io/kubernetes ships
// (api/openapi-spec/swagger.json: missing required fields, wrong types);
// the objects are checked against each other as corral needs them; and
// deploy/kubernetes/corral.yaml is the chart's rendering of its defaults
// (go test -run TestPlainManifests -update rewrites it).
package k8scheck

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
	"k8s.io/kubectl/pkg/util/openapi"
	"sigs.k8s.io/yaml"
)

// kubernetesModule ships the OpenAPI schema the objects are validated
// against: the release whose API the chart targets.
const kubernetesModule = "k8s.io/kubernetes@v1.37.2"

const (
	chartDir   = "../../deploy/helm/corral"
	tlsExample = "../../deploy/helm/corral/examples/values-tls.yaml"
	plainFile  = "../../deploy/kubernetes/corral.yaml"
	release    = "corral"
	namespace  = "openstack"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/corral.yaml from the chart")

// object is one rendered manifest.
type object struct {
	source string // template file
	gvk    schema.GroupVersionKind
	raw    map[string]any
	typed  runtime.Object // nil for kinds outside client-go's scheme (ServiceMonitor)
}

// render renders the chart as `helm template corral deploy/helm/corral -n
// openstack [-f values]` does, values checked against values.schema.json.
func render(t *testing.T, valuesFile string) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if valuesFile != "" {
		v, err := chartutil.ReadValuesFile(valuesFile)
		if err != nil {
			t.Fatal(err)
		}
		vals = v
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// documents splits the rendered templates into YAML documents, in file
// order, skipping NOTES.txt and empty ones.
func documents(t *testing.T, out map[string]string) []object {
	t.Helper()
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []object
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out[n], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var raw map[string]any
			if err := yaml.UnmarshalStrict([]byte(doc), &raw); err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", n, err, doc)
			}
			apiVersion, _ := raw["apiVersion"].(string)
			kind, _ := raw["kind"].(string)
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil || kind == "" {
				t.Fatalf("%s: apiVersion %q kind %q", n, apiVersion, kind)
			}
			o := object{source: n, gvk: gv.WithKind(kind), raw: raw}
			if scheme.Scheme.Recognizes(o.gvk) {
				codec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
				typed, _, err := codec.Decode([]byte(doc), nil, nil)
				if err != nil {
					t.Errorf("%s: %s: strict decoding: %v", n, kind, err)
					continue
				}
				o.typed = typed
			}
			objs = append(objs, o)
		}
	}
	return objs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

var (
	schemaOnce sync.Once
	schemaData openapi.Resources
	schemaErr  error
)

// kubeSchema loads swagger.json from the k8s.io/kubernetes module (go mod
// download puts it in the module cache; nothing is imported from it).
func kubeSchema(t *testing.T) openapi.Resources {
	t.Helper()
	schemaOnce.Do(func() {
		cmd := exec.Command("go", "mod", "download", "-json", kubernetesModule)
		cmd.Dir = t.TempDir() // outside any module: go.mod stays as it is
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			schemaErr = fmt.Errorf("go mod download %s: %w\n%s", kubernetesModule, err, out)
			return
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
			schemaErr = fmt.Errorf("go mod download %s: %v %s", kubernetesModule, err, mod.Error)
			return
		}
		b, err := os.ReadFile(filepath.Join(mod.Dir, "api", "openapi-spec", "swagger.json"))
		if err != nil {
			schemaErr = err
			return
		}
		doc, err := openapi_v2.ParseDocument(b)
		if err != nil {
			schemaErr = err
			return
		}
		schemaData, schemaErr = openapi.NewOpenAPIData(doc)
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schemaData
}

// validate checks every object against the OpenAPI schema (the kinds the
// schema has: a ServiceMonitor is a custom resource).
func validate(t *testing.T, objs []object) {
	t.Helper()
	res := kubeSchema(t)
	for _, o := range objs {
		s := res.LookupResource(o.gvk)
		if s == nil {
			if o.typed != nil {
				t.Errorf("%s: %s is in client-go's scheme but not in %s's schema", o.source, o.gvk, kubernetesModule)
			}
			continue
		}
		for _, err := range validation.ValidateModel(o.raw, s, o.gvk.Kind) {
			t.Errorf("%s: %s: %v", o.source, o.gvk.Kind, err)
		}
	}
}

// lintChart runs helm lint --strict with the values file: errors and
// warnings fail.
func lintChart(t *testing.T, valuesFile string) {
	t.Helper()
	vals := map[string]any{}
	if valuesFile != "" {
		v, err := chartutil.ReadValuesFile(valuesFile)
		if err != nil {
			t.Fatal(err)
		}
		vals = v
	}
	l := lint.All(chartDir, vals, namespace, true)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint %s: %s", filepath.Base(valuesFile), m)
		}
	}
}

func kindOf[T runtime.Object](t *testing.T, objs []object, kind string) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if o.gvk.Kind == kind {
			v, ok := o.typed.(T)
			if !ok {
				t.Fatalf("%s: %s decoded as %T", o.source, kind, o.typed)
			}
			out = append(out, v)
		}
	}
	return out
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// checkTogether checks what a real API server would not: the objects fit
// each other and corral (names, selectors, ports, secrets, quorum).
func checkTogether(t *testing.T, objs []object, tlsOn bool) {
	t.Helper()
	sts := kindOf[*appsv1.StatefulSet](t, objs, "StatefulSet")
	svcs := kindOf[*corev1.Service](t, objs, "Service")
	pdbs := kindOf[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	cms := kindOf[*corev1.ConfigMap](t, objs, "ConfigMap")
	if len(sts) != 1 || len(svcs) != 2 || len(pdbs) != 1 || len(cms) != 1 {
		t.Fatalf("want 1 StatefulSet, 2 Services, 1 PodDisruptionBudget and 1 ConfigMap, got %d, %d, %d, %d", len(sts), len(svcs), len(pdbs), len(cms))
	}
	s := sts[0]
	replicas := int(*s.Spec.Replicas)
	if replicas != 3 {
		t.Errorf("replicas %d, want 3", replicas)
	}
	tmpl := s.Spec.Template
	for k, v := range s.Spec.Selector.MatchLabels {
		if tmpl.Labels[k] != v {
			t.Errorf("the StatefulSet's selector %s=%s does not select its pods (%v)", k, v, tmpl.Labels)
		}
	}
	var headless *corev1.Service
	for _, svc := range svcs {
		for k, v := range svc.Spec.Selector {
			if tmpl.Labels[k] != v {
				t.Errorf("service %s selects %s=%s, which the pods lack", svc.Name, k, v)
			}
		}
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = svc
		}
	}
	if headless == nil || s.Spec.ServiceName != headless.Name || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("the StatefulSet's serviceName %q must be a headless service publishing not-ready peers", s.Spec.ServiceName)
	}
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: peers bootstrap together, they must start in parallel", s.Spec.PodManagementPolicy)
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("want one volume claim template named data")
	}
	// Quorum through voluntary disruptions.
	pdb := pdbs[0]
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != replicas/2+1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want the quorum %d", pdb.Spec.MinAvailable, replicas/2+1)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if tmpl.Labels[k] != v {
			t.Errorf("the PodDisruptionBudget selects %s=%s, which the pods lack", k, v)
		}
	}
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(tmpl.Spec.Containers))
	}
	c := tmpl.Spec.Containers[0]
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for _, svc := range svcs {
		for _, p := range svc.Spec.Ports {
			if !ports[p.TargetPort.String()] {
				t.Errorf("service %s port %s targets %s, which the container does not name", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	// The peer's name and bind address from the pod; secrets from Secrets.
	env := envOf(c)
	if f := env["CORRAL_NAME"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("CORRAL_NAME must be the pod's name")
	}
	if f := env["CORRAL_BIND"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("CORRAL_BIND must be the pod's IP")
	}
	if f := env["CORRAL_ADMIN_TOKEN"].ValueFrom; f == nil || f.SecretKeyRef == nil {
		t.Errorf("CORRAL_ADMIN_TOKEN must come from a Secret")
	}
	_, hasPeerToken := env["CORRAL_AUTH_PEER_TOKEN"]
	if hasPeerToken == tlsOn {
		t.Errorf("CORRAL_AUTH_PEER_TOKEN set %v with TLS %v: the peer token is needed exactly without TLS", hasPeerToken, tlsOn)
	}
	if hasPeerToken && (env["CORRAL_AUTH_PEER_TOKEN"].ValueFrom == nil || env["CORRAL_AUTH_PEER_TOKEN"].ValueFrom.SecretKeyRef == nil) {
		t.Errorf("CORRAL_AUTH_PEER_TOKEN must come from a Secret")
	}
	conf := cms[0].Data["corral.conf"]
	if !strings.Contains(conf, fmt.Sprintf("bootstrap_expect = %d", replicas)) {
		t.Errorf("corral.conf does not expect %d peers:\n%s", replicas, conf)
	}
	join := fmt.Sprintf("join = %s.%s.svc.cluster.local:7482", headless.Name, namespace)
	if !strings.Contains(conf, join) {
		t.Errorf("corral.conf does not join through the headless service (%q):\n%s", join, conf)
	}
	if tlsOn {
		if env["CORRAL_TLS_CERT_FILE"].Value != "/etc/corral/tls/$(CORRAL_NAME).pem" || !strings.Contains(conf, "ca_file = /etc/corral/tls/ca.pem") {
			t.Errorf("with TLS, each peer's certificate is <pod>.pem of the TLS Secret: %v\n%s", env["CORRAL_TLS_CERT_FILE"], conf)
		}
		if _, ok := env["CORRAL_GOSSIP_ENCRYPT"]; !ok {
			t.Errorf("the TLS example encrypts gossip with a key from a Secret")
		}
	}
	// Probes: readiness /readyz, liveness /healthz (or corral health when
	// the API requires client certificates).
	probe := func(p *corev1.Probe, path string) {
		switch {
		case p == nil:
			t.Errorf("no %s probe", path)
		case p.HTTPGet != nil:
			if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "api" {
				t.Errorf("probe %s:%s, want %s on api", p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
			}
		case p.Exec != nil:
			cmd := strings.Join(p.Exec.Command, " ")
			if !strings.HasPrefix(cmd, "/usr/local/bin/corral health") || (path == "/readyz") != strings.Contains(cmd, "--ready") {
				t.Errorf("probe %q for %s", cmd, path)
			}
		default:
			t.Errorf("probe for %s is neither HTTP nor corral health", path)
		}
	}
	probe(c.ReadinessProbe, "/readyz")
	probe(c.LivenessProbe, "/healthz")
	sc := tmpl.Spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 10001 || sc.FSGroup == nil || *sc.FSGroup != 10001 {
		t.Errorf("the pod must run as the image's user corral (10001) with its volume's group")
	}
	// A metrics port for a ServiceMonitor.
	metrics := false
	for _, svc := range svcs {
		for _, p := range svc.Spec.Ports {
			metrics = metrics || p.Name == "metrics"
		}
	}
	if !metrics {
		t.Errorf("no service port named metrics")
	}
	for _, o := range objs {
		if o.gvk.Kind != "ServiceMonitor" {
			continue
		}
		eps, _ := o.raw["spec"].(map[string]any)["endpoints"].([]any)
		if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["path"] != "/metrics" {
			t.Errorf("ServiceMonitor endpoints %v", eps)
		}
	}
}

// TestChartDefaults: the chart with its default values.
func TestChartDefaults(t *testing.T) {
	lintChart(t, "")
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	objs := documents(t, out)
	validate(t, objs)
	checkTogether(t, objs, false)
}

// TestChartTLSExample: the chart with examples/values-tls.yaml (TLS,
// client certificates, encrypted gossip, a ServiceMonitor).
func TestChartTLSExample(t *testing.T) {
	lintChart(t, tlsExample)
	out, err := render(t, tlsExample)
	if err != nil {
		t.Fatal(err)
	}
	objs := documents(t, out)
	validate(t, objs)
	checkTogether(t, objs, true)
	kinds := []string{}
	for _, o := range objs {
		kinds = append(kinds, o.gvk.Kind)
	}
	if !slices.Contains(kinds, "ServiceMonitor") {
		t.Errorf("the TLS example enables a ServiceMonitor: rendered %v", kinds)
	}
}

// TestValuesSchema: values.schema.json refuses what would break the peers.
func TestValuesSchema(t *testing.T) {
	for _, bad := range []struct{ name, yaml, want string }{
		{"even replicas", "replicas: 4\n", "replicas"},
		{"unknown key", "replicaz: 3\n", "replicaz"},
		{"bad size", "persistence:\n  size: lots\n", "size"},
		{"bad secret name", "auth:\n  existingSecret: Not_A_Name\n", "existingSecret"},
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(bad.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := render(t, f)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: render error %v, want one naming %s", bad.name, err, bad.want)
		}
	}
}

// TestStrictDecodingCatchesTypos: the checks above would see a misspelt
// field or a missing required one (the reason they exist: helm lint does
// not look at Kubernetes' fields).
func TestStrictDecodingCatchesTypos(t *testing.T) {
	doc := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  serviseName: x\n  template: {spec: {containers: [{image: x}]}}\n"
	codec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	if _, _, err := codec.Decode([]byte(doc), nil, nil); err == nil || !strings.Contains(err.Error(), "serviseName") {
		t.Errorf("strict decoding of a misspelt field: %v", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	errs := validation.ValidateModel(raw, kubeSchema(t).LookupResource(gvk), gvk.Kind)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, `"selector"`) || !strings.Contains(all, `"name"`) {
		t.Errorf("OpenAPI validation of a StatefulSet without selector and container name: %s", all)
	}
}

// TestPlainManifests: deploy/kubernetes/corral.yaml is the chart's default
// rendering (release corral, namespace openstack), for kubectl apply -k or -f.
func TestPlainManifests(t *testing.T) {
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		if !strings.HasSuffix(n, "NOTES.txt") && strings.TrimSpace(stripComments(out[n])) != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# corral as plain Kubernetes manifests: `helm template corral deploy/helm/corral -n openstack`\n" +
		"# (tools/k8scheck keeps this file equal to it; go test ./k8scheck -run TestPlainManifests -update).\n" +
		"# Create the Secret corral-auth first (docs/kubernetes.md), then: kubectl -n openstack apply -f corral.yaml\n")
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", strings.TrimPrefix(n, "corral/"), strings.TrimSpace(out[n]))
	}
	if *update {
		if err := os.WriteFile(plainFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(plainFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is not the chart's rendering of its defaults: run go test ./k8scheck -run TestPlainManifests -update", plainFile)
	}
}

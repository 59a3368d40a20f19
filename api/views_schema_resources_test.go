package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// The walk of TestViewsFollowTheMicroversion over the other resources:
// the hypervisors' search, servers and statistics, extensions, usage,
// server groups and instance actions.

func (w *viewWalk) hypervisorRoutes() {
	_, b := w.call(http.MethodGet, "/os-hypervisors/statistics", "", "hypervisors/get_hypervisor_statistics")
	w.fields("hypervisor_statistics", "statistics", b["hypervisor_statistics"])
	if w.at(53) {
		// Gone at 2.53 for ?hypervisor_hostname_pattern= and ?with_servers=.
		for _, path := range []string{"/os-hypervisors/kvm/search", "/os-hypervisors/kvm/servers"} {
			if r, _ := w.call(http.MethodGet, path, "", ""); r.code != http.StatusNotFound {
				w.t.Errorf("%s at %s: %s, want 404", path, w.mv, r)
			}
		}
		return
	}
	_, b = w.call(http.MethodGet, "/os-hypervisors/kvm/search", "", "hypervisors/list_search_hypervisors")
	w.each("hypervisor", "brief", b["hypervisors"])
	// Every hypervisor's hostname holds a '-' (node UUIDs, kvm-1).
	_, b = w.call(http.MethodGet, "/os-hypervisors/-/servers", "", "hypervisors/get_hypervisors_servers")
	w.each("hypervisor", "servers", b["hypervisors"])
	withServers := false
	for _, it := range b["hypervisors"].([]any) {
		_, has := it.(map[string]any)["servers"]
		withServers = withServers || has
	}
	if !withServers {
		w.t.Errorf("os-hypervisors/-/servers at %s shows no hypervisor's servers: %v", w.mv, b)
	}
}

func (w *viewWalk) extensions() {
	_, b := w.call(http.MethodGet, "/extensions", "", "extensions/list_extensions")
	w.each("extension", "show", b["extensions"])
	_, b = w.call(http.MethodGet, "/extensions/os-keypairs", "", "")
	w.fields("extension", "show", b["extension"])
}

func (w *viewWalk) usages() {
	q := "?" + url.Values{
		"start": {time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04:05")},
		"end":   {time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05.000000")},
	}.Encode()
	_, b := w.call(http.MethodGet, "/os-simple-tenant-usage"+q, "", "tenant_usages/list_tenant_usage")
	w.each("tenant_usage", "list", b["tenant_usages"])
	_, b = w.call(http.MethodGet, "/os-simple-tenant-usage"+q+"&detailed=1", "", "tenant_usages/list_tenant_usage")
	w.each("tenant_usage", "list", b["tenant_usages"])
	list, _ := b["tenant_usages"].([]any)
	for _, it := range list {
		tu := it.(map[string]any)
		w.each("server_usage", "server", tu["server_usages"])
		_, sb := w.call(http.MethodGet, fmt.Sprintf("/os-simple-tenant-usage/%s%s", tu["tenant_id"], q), "", "tenant_usages/get_tenant_usage")
		w.fields("tenant_usage", "show", sb["tenant_usage"])
		w.each("server_usage", "server", sb["tenant_usage"].(map[string]any)["server_usages"])
	}
}

func (w *viewWalk) serverGroups() {
	body := `{"server_group": {"name": "walk", "policies": ["anti-affinity"]}}`
	if w.at(64) {
		body = `{"server_group": {"name": "walk", "policy": "anti-affinity", "rules": {"max_server_per_host": 2}}}`
	}
	r, b := w.call(http.MethodPost, "/os-server-groups", body, "server_groups/create_show_server_group")
	g, _ := b["server_group"].(map[string]any)
	if g == nil {
		w.t.Errorf("create server group at %s: %s", w.mv, r)
		return
	}
	w.fields("server_group", "show", g)
	id := g["id"].(string)
	_, b = w.call(http.MethodGet, "/os-server-groups/"+id, "", "server_groups/create_show_server_group")
	w.fields("server_group", "show", b["server_group"])
	_, b = w.call(http.MethodGet, "/os-server-groups", "", "server_groups/list_server_groups")
	w.each("server_group", "show", b["server_groups"])
	w.call(http.MethodDelete, "/os-server-groups/"+id, "", "server_groups/delete_server_group")
}

// instanceActions walks the actions of the adopted server (created,
// locked) and of the broken one (its build failed: an event in error).
func (w *viewWalk) instanceActions(broken string) {
	// Tempest holds the list to 2.1's schema at every microversion; Nova
	// adds updated_at at 2.58.
	list := ""
	if !w.at(58) {
		list = "servers/list_instance_actions"
	}
	// Tempest's 2.45 schemas have no show_instance_action (its client
	// would fail there): from 2.45 to 2.46 the fields alone are held.
	show := "servers/show_instance_action"
	if w.at(45) && !w.at(47) {
		show = ""
	}
	for _, id := range []string{adoptedID, broken} {
		_, b := w.call(http.MethodGet, "/servers/"+id+"/os-instance-actions", "", list)
		w.each("instance_action", "list", b["instanceActions"])
		items, _ := b["instanceActions"].([]any)
		for _, it := range items {
			rid := it.(map[string]any)["request_id"].(string)
			_, sb := w.call(http.MethodGet, "/servers/"+id+"/os-instance-actions/"+url.PathEscape(rid), "", show)
			a, _ := sb["instanceAction"].(map[string]any)
			w.fields("instance_action", "show", a)
			events, _ := a["events"].([]any)
			for _, e := range events {
				w.fields("instance_action_event", "show", e)
			}
		}
	}
}

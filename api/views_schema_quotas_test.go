package api_test

import "net/http"

// quotas walks os-quota-sets and os-quota-class-sets: every route of
// their views, held to Tempest's schemas and to the tables.
func (w *viewWalk) quotas() {
	_, b := w.call(http.MethodGet, "/os-quota-sets/p1", "", "quotas/get_quota_set")
	w.fields("quota_set", "show", b["quota_set"])
	_, b = w.call(http.MethodGet, "/os-quota-sets/p1/defaults", "", "quotas/get_quota_set")
	w.fields("quota_set", "show", b["quota_set"])
	_, b = w.call(http.MethodGet, "/os-quota-sets/admin/detail", "", "quotas/get_quota_set_details")
	w.fields("quota_set", "detail", b["quota_set"])
	_, b = w.call(http.MethodPut, "/os-quota-sets/p1", `{"quota_set": {"instances": 20, "key_pairs": "30"}}`, "quotas/update_quota_set")
	w.fields("quota_set", "update", b["quota_set"])
	_, b = w.call(http.MethodGet, "/os-quota-sets/p1?user_id=u1", "", "quotas/get_quota_set")
	w.fields("quota_set", "show", b["quota_set"])
	w.call(http.MethodDelete, "/os-quota-sets/p1", "", "quotas/delete_quota")

	_, b = w.call(http.MethodGet, "/os-quota-class-sets/default", "", "quota_classes/get_quota_class_set")
	w.fields("quota_class_set", "show", b["quota_class_set"])
	_, b = w.call(http.MethodPut, "/os-quota-class-sets/default", `{"quota_class_set": {"instances": -1}}`, "quota_classes/update_quota_class_set")
	w.fields("quota_class_set", "update", b["quota_class_set"])
}

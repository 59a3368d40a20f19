package nova

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/glance"
)

// ImageService reads images from Glance (*glance.Client implements it).
// token is the caller's Keystone token; empty for a caller with one of
// corral's static tokens, which never leave corral: the service then
// reads as corral's own service user, if it has one. Errors wrap
// glance.ErrNotFound, glance.ErrUnauthorized or glance.ErrUnavailable.
type ImageService interface {
	Image(ctx context.Context, token, id string) (glance.Image, error)
}

// checkImageRef checks a boot's or rebuild's imageRef and returns what
// Ironic gets as the node's image_source.
//
// With an image service configured ([glance]), imageRef is a Glance image
// id (a UUID, or a link ending in one): the image must exist and be
// active, as Nova checks, and Ironic fetches it from Glance. It is looked
// up with the caller's Keystone token (the caller's own rights, as Nova
// does), or, for a caller with a static token, as corral's [glance]
// service user.
//
// Without one, imageRef goes to Ironic as it is: an http(s):// URL Ironic
// downloads (the simulator and `corral dev` take any), or whatever the
// Ironic behind corral accepts as image_source.
func (h *Handlers) checkImageRef(c echo.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", core.BadRequest("imageRef is required: a bare-metal server boots from an image")
	}
	if h.images == nil {
		return ref, nil
	}
	id := ref
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		id = ref[i+1:]
	}
	if uuid.Validate(id) != nil {
		return "", core.BadRequest("Invalid imageRef provided: %q is not a Glance image id; give the id of an active image (openstack image list)", ref)
	}
	token := core.CallerOf(c).KeystoneToken
	im, err := h.images.Image(c.Request().Context(), token, id)
	switch {
	case errors.Is(err, glance.ErrNotFound):
		return "", core.BadRequest("Image %s could not be found.", id)
	case errors.Is(err, glance.ErrUnauthorized) && token == "":
		return "", core.BadRequest("Image %s could not be read as corral (%v): boot with a Keystone token, "+
			"or give corral a Glance service user ([glance] auth_type = password)", id, err)
	case errors.Is(err, glance.ErrUnauthorized):
		return "", core.BadRequest("Image %s could not be read with this token (%v)", id, err)
	case err != nil:
		return "", echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("cannot check image %s: %v", id, err))
	case im.Status != "active":
		return "", core.BadRequest("Image %s is not active (status %s).", id, im.Status)
	}
	return im.ID, nil
}

package nova

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/glance"
)

// ImageService reads images from Glance, and changes them for Nova's
// image proxy (*glance.Client implements it).
// token is the caller's Keystone token; empty for a caller with one of
// corral's static tokens, which never leave corral: the service then
// reads as corral's own service user, if it has one. Errors wrap
// glance.ErrNotFound, glance.ErrUnauthorized or glance.ErrUnavailable.
type ImageService interface {
	Image(ctx context.Context, token, id string) (glance.Image, error)
	// The image proxy's (images_proxy.go, image_metadata.go).
	URL() string
	ListImages(ctx context.Context, token string, q url.Values, max int) ([]glance.Doc, error)
	ImageDoc(ctx context.Context, token, id string) (glance.Doc, error)
	DeleteImage(ctx context.Context, token, id string) error
	PatchImage(ctx context.Context, token, id string, ops []glance.PatchOp) (glance.Doc, error)
	BaseAttributes(ctx context.Context, token string) (map[string]bool, error)
}

// checkImageRef checks a boot's or rebuild's imageRef and returns what
// Ironic gets as the node's image_source, and the image when Glance was
// asked (nil otherwise).
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
// Ironic behind corral accepts as image_source. Either way it is at most
// fsm.MaxImageRefLen characters, without spaces or control characters.
func (h *Handlers) checkImageRef(c echo.Context, ref string) (string, *glance.Image, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", nil, core.BadRequest("imageRef is required: a bare-metal server boots from an image")
	}
	if len(ref) > fsm.MaxImageRefLen || strings.IndexFunc(ref, func(r rune) bool { return unicode.IsSpace(r) || !fsm.IsStorableRune(r, false) }) >= 0 {
		return "", nil, core.BadRequest("Invalid imageRef provided: an image reference is an image id or a URL of at most %d characters, without spaces or control characters", fsm.MaxImageRefLen)
	}
	if h.images == nil {
		return ref, nil, nil
	}
	id := ref
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		id = ref[i+1:]
	}
	if uuid.Validate(id) != nil {
		return "", nil, core.BadRequest("Invalid imageRef provided: %q is not a Glance image id; give the id of an active image (openstack image list)", shown(ref))
	}
	token := core.CallerOf(c).KeystoneToken
	im, err := h.images.Image(c.Request().Context(), token, id)
	switch {
	case errors.Is(err, glance.ErrNotFound):
		return "", nil, core.BadRequest("Image %s could not be found.", id)
	case errors.Is(err, glance.ErrUnauthorized) && token == "":
		return "", nil, core.BadRequest("Image %s could not be read as corral (%v): boot with a Keystone token, "+
			"or give corral a Glance service user ([glance] auth_type = password)", id, err)
	case errors.Is(err, glance.ErrUnauthorized):
		return "", nil, core.BadRequest("Image %s could not be read with this token (%v)", id, err)
	case err != nil:
		return "", nil, echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("cannot check image %s: %v", id, err))
	case im.Status != "active":
		return "", nil, core.BadRequest("Image %s is not active (status %s).", id, im.Status)
	}
	return im.ID, &im, nil
}

// checkImageFits refuses an image the flavor is too small for, as Nova:
// less memory than the image's min_ram; a disk (unless the flavor's is 0,
// which Nova does not check) smaller than its min_disk or its data.
func checkImageFits(im *glance.Image, f fsm.Flavor) error {
	if im == nil {
		return nil
	}
	if int64(f.RAM) < im.MinRAM {
		return core.BadRequest("Flavor's memory is too small for requested image.")
	}
	disk := int64(f.Disk) << 30
	switch {
	case disk == 0:
	case im.Size > disk:
		return core.BadRequest("Flavor's disk is too small for requested image. Flavor disk is %d bytes, image is %d bytes.", disk, im.Size)
	case im.MinDisk > int64(f.Disk):
		return core.BadRequest("Flavor's disk is smaller than the minimum size specified in image metadata. Flavor disk is %d bytes, minimum size is %d bytes.", disk, im.MinDisk<<30)
	}
	return nil
}

// bootFlavor is the flavor a boot names, read from this peer's replica
// after a default read barrier (bootState), when it exists: the leader's
// Apply refuses a flavor that does not.
func (h *Handlers) bootFlavor(c echo.Context, id string) (fsm.Flavor, bool, error) {
	st, err := h.bootState(c)
	if err != nil {
		return fsm.Flavor{}, false, err
	}
	f, err := st.Flavor(id)
	return f, err == nil, nil
}

package main

import (
	"strings"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/glance"
)

// glanceOptions are the [glance] options; README.md documents them with
// the others.
var glanceOptions = []option{
	{section: "glance", key: "url", usage: "Glance's endpoint, e.g. http://127.0.0.1:9292: imageRef must then be an active Glance image (empty: imageRef goes to Ironic as is)",
		set: str(func(c *agentConfig) *string { return &c.GlanceURL })},
}

func init() { options = append(options, glanceOptions...) }

// images is the API's image service: a Glance client when [glance] url is
// set, nil otherwise.
func (c *agentConfig) images() (api.ImageService, error) {
	if strings.TrimSpace(c.GlanceURL) == "" {
		return nil, nil
	}
	return glance.New(strings.TrimSpace(c.GlanceURL), nil)
}

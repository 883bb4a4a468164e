package requestlog

import (
	"fmt"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// classLabels follows the distinct class labels of one file in record
// order.
type classLabels struct {
	last     string
	seen     map[string]struct{}
	first    []string // the first few, for the message
	over     string   // the label past the cap ("" while within it)
	overLine int
}

// observe notes the next record's label and reports whether it is the
// first past the cap, whose line the caller then gives to at.
func (c *classLabels) observe(label string) (over bool) {
	// labels are interned, so a repeat of the last compares one pointer
	if label == "" || label == c.last || c.over != "" {
		return false
	}
	c.last = label
	if _, ok := c.seen[label]; ok {
		return false
	}
	if len(c.seen) == sources.MaxClassLabels {
		c.over = label
		return true
	}
	if c.seen == nil {
		c.seen = make(map[string]struct{})
	}
	c.seen[label] = struct{}{}
	if len(c.first) < 3 {
		c.first = append(c.first, label)
	}
	return false
}

// at records the line of the label past the cap.
func (c *classLabels) at(line int) { c.overLine = line }

// full reports whether a label past the cap was seen.
func (c *classLabels) full() bool { return c.over != "" }

// err is the refusal once a label past the cap was seen (nil before).
func (c *classLabels) err(path string) error {
	if c.over == "" {
		return nil
	}
	var ex []string
	for _, l := range c.first {
		ex = append(ex, quoteVal([]byte(l)))
	}
	return &ParseError{Path: path, Line: c.overLine, Field: "class",
		Msg: fmt.Sprintf("%s is distinct class label number %d (the first: %s, …): a class label names a kind of traffic (chat, batch, …) and each one is a stratum the arms are compared within, so a value per request (an id, a prompt) cannot be one; leave the field out, or map its values to at most %d classes",
			quoteVal([]byte(c.over)), sources.MaxClassLabels+1, strings.Join(ex, ", "), sources.MaxClassLabels)}
}

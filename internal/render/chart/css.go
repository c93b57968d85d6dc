package chart

import (
	_ "embed"
	"html/template"
)

//go:embed chart.css
var css string

// CSS is the style sheet every page that shows charts includes first: the
// page colours, light and dark, and the charts' and legends' rules.
func CSS() template.CSS { return template.CSS(css) }

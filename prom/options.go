package prom

import "github.com/prometheus/client_golang/prometheus"

// Option configures the collector [New] makes.
type Option func(*config)

// config holds every option's value.
type config struct {
	constLabels prometheus.Labels
	classes     bool // per-class series: off by default
}

// WithConstLabels adds labels with fixed values to every series of the
// collector, for example the region or tenant the process serves. The names
// "allocator" and "class" are reserved: using them, or an invalid label
// name or value, makes registering the collector fail with an error that
// says so. Later calls add to the labels of earlier ones.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) {
		if c.constLabels == nil {
			c.constLabels = make(prometheus.Labels, len(labels))
		}
		for k, v := range labels {
			c.constLabels[k] = v
		}
	}
}

// WithClasses adds the per-class series (memkit_class_*): eight per size
// class of each allocator, 512 for a pool of 64 classes. [New] leaves them
// out unless given this option.
func WithClasses() Option {
	return func(c *config) { c.classes = true }
}

// withoutClasses drops the per-class series: the default of [New], for the
// tests' single-allocator collector, which exports them by default.
func withoutClasses() Option {
	return func(c *config) { c.classes = false }
}

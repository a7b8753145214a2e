package memkitprom

import "github.com/prometheus/client_golang/prometheus"

// Option configures a collector made by [NewCollector].
type Option func(*config)

// config holds every option's value; its zero value is the default.
type config struct {
	constLabels prometheus.Labels
	noClasses   bool
}

// WithConstLabels adds labels with fixed values to every series of the
// collector, for example the tenant or shard an allocator serves. The names
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

// WithoutClasses drops the per-class series (memkit_class_*), leaving the
// ten allocator-wide ones. Use it to keep the number of series down when
// many allocators with many classes are exported; the allocator's
// ReadStats still fills its class rows.
func WithoutClasses() Option {
	return func(c *config) { c.noClasses = true }
}

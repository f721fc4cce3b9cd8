"""The aggregation executors: one aggregation over many frames (`aggregate`),
partial states (`partials`, `window_states`), running states, the
k-collections, the sketches and the items alive over ranges (`alive`)."""

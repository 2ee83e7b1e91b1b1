"""The showcase: selectors in live training on the embedded data (:mod:`.run`), the per-round
fronts section (:mod:`.fronts`), and the report's data (:mod:`.report`) and page (:mod:`.html`).
Runs go through the shared worker pool of :mod:`..runner`."""

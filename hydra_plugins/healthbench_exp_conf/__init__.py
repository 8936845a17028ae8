"""healthbench-exp's config search path: a `conf/` in the working directory is searched after the
package's presets, so `conf/model/my_model.yaml` is `model=my_model` with no flag (as in
lightning-hydra-template's `configs/`). See `searchpath.py`."""

"""One module per study notebook, same name without the number: what only that study computes.

=======================================  =============================================
notebook                                 study module
=======================================  =============================================
``01_ethayarajh_contextuality``          :mod:`isolib.studies.ethayarajh_contextuality`
``02_cai_clusters_manifolds``            :mod:`isolib.studies.cai_clusters_manifolds`
``03_rajaee_cluster_isotropy``           :mod:`isolib.studies.rajaee_cluster_isotropy`
``04_mickus_isotropy_clusters``          :mod:`isolib.studies.mickus_isotropy_clusters`
``05_every_measure``                     :mod:`isolib.studies.every_measure`
=======================================  =============================================

A study module declares its paper's findings with :mod:`isolib.findings` and builds on the
library (:mod:`isolib.metrics`, :mod:`isolib.embed`, ...). The library never imports a study
module, and no study module imports another (``tests/test_layout.py`` checks both).
"""

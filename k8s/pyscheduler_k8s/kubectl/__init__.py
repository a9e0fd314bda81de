"""``kubectl pyscheduler``: a kubectl plugin that asks the scheduler's REST API and answers in a
person's terms (docs/kubectl.md).

Installed with ``pyscheduler[k8s]`` as the console script ``kubectl-pyscheduler``, which kubectl
finds on ``PATH``. Layers, top to bottom (each imports only those below it):

- :mod:`.cli`: the arguments, and one function per command that fetches and prints;
- :mod:`.reach` (where the scheduler is: ``--server`` or the cluster's service proxy) and
  :mod:`.targets` (a pod, a Job or an application named on the command line, to application
  ids through the kube API);
- :mod:`.client`: the REST API's calls over HTTP (urllib3, the shim's own dependency);
- the views, pure functions from the answers' plain data to text, tested without a server:
  :mod:`.queues_view`, :mod:`.events_view`, :mod:`.why_view`, over :mod:`.units` (quantities,
  bars, ordinals).
"""

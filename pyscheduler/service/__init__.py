"""The core entry point: one scheduler, the RMs attached to it, and nothing of HTTP.

- :mod:`.options`: :class:`CoreOptions`, what a service is built from.
- :mod:`.entrypoint`: :class:`SchedulerService`, which assembles the cluster context, the RM
  proxy, the scheduling loop and the background services, starts and stops them, and
  attaches RMs.
- :mod:`.rm`: what the service asks of an attached RM (:class:`AttachedRM`, :class:`RoutedRM`,
  :class:`Route`, :class:`MeasuredRM`, :class:`RMMetric`); it imports no part of the core, so RM
  packages may import it at run time.

Embedding an RM (``pyscheduler serve --rm mypackage.shim:attach``, or
``service.attach(attach)`` in a program of one's own)::

    from pyscheduler.service import RMMetric, Route, SchedulerService
    from pyscheduler.si import messages as si

    class MyShim:                     # the RM callback (see docs/scheduler.md)
        def update_allocation(self, response): ...
        def update_application(self, response): ...
        def update_node(self, response): ...
        def send_event(self, events): ...
        def update_container_scheduling_state(self, request): ...
        def stop(self): ...           # called when the service stops
        def routes(self):             # optional: GET endpoints answering JSON
            return [Route("/ws/v1/my-rm/status", "status", lambda: {"ok": True})]
        def metrics(self):            # optional: Prometheus metrics, asked at each scrape
            return [RMMetric("my_rm_pods", "gauge", "Pods seen.", values=(((), 3.0),))]

    def attach(service: SchedulerService) -> MyShim:
        shim = MyShim()
        service.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(rm_id="my-rm", policy_group="queues",
                                              config=service.config_text),
            shim)
        # ... start the thread that watches the real cluster and calls service.proxy.update_*
        return shim
"""

from pyscheduler.service.entrypoint import Attachment, SchedulerService, load_attach
from pyscheduler.service.options import CoreOptions
from pyscheduler.service.rm import Attach, AttachedRM, MeasuredRM, RMMetric, Route, RoutedRM

__all__ = ["Attach", "AttachedRM", "Attachment", "CoreOptions", "MeasuredRM", "RMMetric", "Route", "RoutedRM",
           "SchedulerService", "load_attach"]

{#- The per-batch figures a cost snapshot keeps (R16); one list for the snapshot and the history mart. -#}
{% macro batch_cost_figures() %}
    {{ return([
        'jobs', 'requested_gpu_hours', 'occupied_gpu_hours', 'effective_compute_gpu_hours', 'comm_wait_gpu_hours',
        'idle_gpu_hours', 'unobserved_gpu_hours', 'failed_gpu_hours', 'rerun_gpu_hours', 'steps_run',
        'steps_counted', 'steps_discarded', 'step_seconds_median', 'step_seconds_max', 'step_max_number',
        'compute_cost', 'rerun_compute_cost', 'cost_per_counted_step', 'cost_per_effective_gpu_hour'
    ]) }}
{% endmacro %}

{#- The full-cost figures a snapshot keeps beside them (R9, R16), from fct_batch_costs: a restated bill or a late
    timesheet changes them and so adds a version. -#}
{% macro batch_full_cost_figures() %}
    {{ return([
        'total_cost', 'total_cost_low', 'total_cost_high', 'storage_cost', 'labour_cost', 'services_cost',
        'cloud_compute_cost', 'pending_cost', 'labour_people'
    ]) }}
{% endmacro %}

{#- Full-cost figures added to the snapshot after versions were written (R16), with their value in those versions:
    hashed only when they differ from it (insert_only_snapshot's appended), so adding them wrote no new version.
    A batch with unpriced owned compute has a null compute and total cost (no silent zero). The measured people
    were not kept before and are not known in those versions (-1: no count is, so every batch takes a version that
    has them); the small-group rule blanks such a version's labour when it had any. running_jobs (0 before it was
    kept: a running job then had occupied nothing) marks a version whose figures are so far: a batch's version
    with a running job is followed by a new one as the job runs on or ends. -#}
{% macro batch_appended_cost_figures() %}
    {{ return({'is_unpriced': 'false', 'unpriced_gpu_hours': '0', 'labour_measured_people': '-1',
               'running_jobs': '0'}) }}
{% endmacro %}

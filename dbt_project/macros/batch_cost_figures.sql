{#- The per-batch figures a cost snapshot keeps (R16); one list for the snapshot and the history mart. -#}
{% macro batch_cost_figures() %}
    {{ return([
        'jobs', 'requested_gpu_hours', 'occupied_gpu_hours', 'effective_compute_gpu_hours', 'comm_wait_gpu_hours',
        'idle_gpu_hours', 'unobserved_gpu_hours', 'failed_gpu_hours', 'rerun_gpu_hours', 'steps_run',
        'steps_counted', 'steps_discarded', 'step_seconds_median', 'step_seconds_max', 'step_max_number',
        'compute_cost', 'rerun_compute_cost', 'cost_per_counted_step', 'cost_per_effective_gpu_hour'
    ]) }}
{% endmacro %}

-- The routing view: per task category and the model it was routed to, success rate and cost per successful task.
{{ task_economics(['task_category', 'routed_model']) }}

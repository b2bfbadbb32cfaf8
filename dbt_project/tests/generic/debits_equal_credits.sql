{#-
    A balanced journal: per value of `by` (for example each month), the total of `debit` equals the total of
    `credit`, exactly. Returns every group that does not balance, with both totals.
-#}
{% test debits_equal_credits(model, debit, credit, by) %}

select
    {{ by }},
    sum({{ debit }}) as debits,
    sum({{ credit }}) as credits
from {{ model }}
group by {{ by }}
having sum({{ debit }}) <> sum({{ credit }})

{% endtest %}

{#- Who is one person (R20): people are counted by person_key, and a labour figure of fewer than three people is
    blanked for engineering (docs/confidentiality.md, who is one person). Harvest writes a person's name as typed in
    their profile, so two exports, or two people's typing, may write one name differently: the key compares names
    as a reader would, never as bytes. Each of First Name and Last Name is compared (person_name) after:
    - every Unicode space (no-break, em, thin, ideographic, tab, line breaks...) is a space, runs of spaces are one,
      and leading and trailing ones go;
    - invisible characters (zero-width space, joiners, word joiner, soft hyphen, byte order mark) go;
    - full-width letters, digits, hyphen and full stop are their ASCII ones;
    - accents go: a letter written precomposed (é, U+00E9) or with combining marks (e + U+0301) is its base letter
      (e), for the Latin, Greek and Cyrillic letters whose Unicode decomposition is a letter and combining marks;
    - then lower case.
    Folding more than a reader would (Jose and José are one person) can only count fewer people, which blanks more,
    never less. Written with translate, regexp_replace and lower so that every adapter folds the same: Spark has
    no Unicode normalisation. tests/test_person_key.py checks the table against Python's unicodedata. -#}
{% macro person_key(first_name, last_name) -%}
    {{ dbt.hash(dbt.concat([person_name(first_name), "'|'", person_name(last_name)])) }}
{%- endmacro %}

{% macro person_name(name) -%}
    {%- set folding = person_name_folding() -%}
    lower(trim({{ collapse_spaces("translate(" ~ name ~ ", '" ~ folding[0] ~ "', '" ~ folding[1] ~ "')") }}))
{%- endmacro %}

{#- [from, to] of the translate: each character of from becomes the one at its place in to; those past the end of
    to (invisible characters and combining marks) are removed. -#}
{% macro person_name_folding() -%}
    {#- Unicode's spaces (White_Space) other than the ASCII space, each becoming a space. -#}
    {%- set spaces = "\u0009\u000a\u000b\u000c\u000d\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
        ~ "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000" -%}
    {#- Full-width forms: digits, Latin letters, hyphen-minus and full stop. -#}
    {%- set full_width = "０１２３４５６７８９ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ－．" -%}
    {%- set ascii = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-." -%}
    {#- Latin-1 Supplement, Latin Extended-A and -B: precomposed letters and their base letters. -#}
    {%- set accented_0 = "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǠǡǢǣǦǧǨǩǪǫǬǭǮǯǰǴǵǸǹǺǻǼǽǾǿȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳ" -%}
    {%- set base_0 = "AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyyAaAaAaCcCcCcCcDdEeEeEeEeEeGgGgGgGgHhIiIiIiIiIJjKkLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtUuUuUuUuUuUuWwYyYZzZzZzOoUuAaIiOoUuUuUuUuUuAaAaÆæGgKkOoOoƷʒjGgNnAaÆæØøAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOoOoYy" -%}
    {#- Greek and Coptic: precomposed letters and their base letters. -#}
    {%- set accented_1 = "΅ΆΈΉΊΌΎΏΐΪΫάέήίΰϊϋόύώϓϔ" -%}
    {%- set base_1 = "¨ΑΕΗΙΟΥΩιΙΥαεηιυιυουωϒϒ" -%}
    {#- Cyrillic: precomposed letters and their base letters. -#}
    {%- set accented_2 = "ЀЁЃЇЌЍЎЙйѐёѓїќѝўѶѷӁӂӐӑӒӓӖӗӚӛӜӝӞӟӢӣӤӥӦӧӪӫӬӭӮӯӰӱӲӳӴӵӸӹ" -%}
    {%- set base_2 = "ЕЕГІКИУИиеегікиуѴѵЖжАаАаЕеӘәЖжЗзИиИиОоӨөЭэУуУуУуЧчЫы" -%}
    {#- Latin Extended Additional: precomposed letters and their base letters. -#}
    {%- set accented_3 = "ḀḁḂḃḄḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷḸḹḺḻḼḽḾḿṀṁṂṃṄṅṆṇṈṉṊṋṌṍṎṏṐṑṒṓṔṕṖṗṘṙṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẖẗẘẙẛẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵẶặẸẹẺẻẼẽẾếỀềỂểỄễỆệỈỉỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰựỲỳỴỵỶỷỸỹ" -%}
    {%- set base_3 = "AaBbBbBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLlLlLlLlMmMmMmNnNnNnNnOoOoOoOoPpPpRrRrRrRrSsSsSsSsSsTtTtTtTtUuUuUuUuUuVvVvWwWwWwWwWwXxXxYyZzZzZzhtwyſAaAaAaAaAaAaAaAaAaAaAaAaEeEeEeEeEeEeEeEeIiIiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUuYyYyYyYy" -%}
    {#- Greek Extended: precomposed letters and their base letters. -#}
    {%- set accented_4 = "ἀἁἂἃἄἅἆἇἈἉἊἋἌἍἎἏἐἑἒἓἔἕἘἙἚἛἜἝἠἡἢἣἤἥἦἧἨἩἪἫἬἭἮἯἰἱἲἳἴἵἶἷἸἹἺἻἼἽἾἿὀὁὂὃὄὅὈὉὊὋὌὍὐὑὒὓὔὕὖὗὙὛὝὟὠὡὢὣὤὥὦὧὨὩὪὫὬὭὮὯὰάὲέὴήὶίὸόὺύὼώᾀᾁᾂᾃᾄᾅᾆᾇᾈᾉᾊᾋᾌᾍᾎᾏᾐᾑᾒᾓᾔᾕᾖᾗᾘᾙᾚᾛᾜᾝᾞᾟᾠᾡᾢᾣᾤᾥᾦᾧᾨᾩᾪᾫᾬᾭᾮᾯᾰᾱᾲᾳᾴᾶᾷᾸᾹᾺΆᾼ῁ῂῃῄῆῇῈΈῊΉῌ῍῎῏ῐῑῒΐῖῗῘῙῚΊ῝῞῟ῠῡῢΰῤῥῦῧῨῩῪΎῬ῭΅ῲῳῴῶῷῸΌῺΏῼ" -%}
    {%- set base_4 = "ααααααααΑΑΑΑΑΑΑΑεεεεεεΕΕΕΕΕΕηηηηηηηηΗΗΗΗΗΗΗΗιιιιιιιιΙΙΙΙΙΙΙΙοοοοοοΟΟΟΟΟΟυυυυυυυυΥΥΥΥωωωωωωωωΩΩΩΩΩΩΩΩααεεηηιιοουυωωααααααααΑΑΑΑΑΑΑΑηηηηηηηηΗΗΗΗΗΗΗΗωωωωωωωωΩΩΩΩΩΩΩΩαααααααΑΑΑΑΑ¨ηηηηηΕΕΗΗΗ᾿᾿᾿ιιιιιιΙΙΙΙ῾῾῾υυυυρρυυΥΥΥΥΡ¨¨ωωωωωΟΟΩΩΩ" -%}
    {#- Removed: soft hyphen, Mongolian vowel separator, zero-width space, non-joiner and joiner, word joiner,
        byte order mark; then the combining diacritical marks U+0300..U+036F. -#}
    {%- set invisible = "\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff" -%}
    {%- set combining = "\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030d\u030e\u030f\u0310\u0311\u0312\u0313\u0314\u0315\u0316\u0317\u0318\u0319\u031a\u031b\u031c\u031d\u031e\u031f\u0320\u0321\u0322\u0323\u0324\u0325\u0326\u0327\u0328\u0329\u032a\u032b\u032c\u032d\u032e\u032f\u0330\u0331\u0332\u0333\u0334\u0335\u0336\u0337\u0338\u0339\u033a\u033b\u033c\u033d\u033e\u033f\u0340\u0341\u0342\u0343\u0344\u0345\u0346\u0347\u0348\u0349\u034a\u034b\u034c\u034d\u034e\u034f\u0350\u0351\u0352\u0353\u0354\u0355\u0356\u0357\u0358\u0359\u035a\u035b\u035c\u035d\u035e\u035f\u0360\u0361\u0362\u0363\u0364\u0365\u0366\u0367\u0368\u0369\u036a\u036b\u036c\u036d\u036e\u036f" -%}
    {{ return([spaces ~ full_width ~ accented_0 ~ accented_1 ~ accented_2 ~ accented_3 ~ accented_4 ~ invisible ~ combining,
               " " * (spaces | length) ~ ascii ~ base_0 ~ base_1 ~ base_2 ~ base_3 ~ base_4]) }}
{%- endmacro %}

{#- Runs of spaces as one space: regexp_replace replaces every match with the 'g' flag, and on Spark always. -#}
{% macro collapse_spaces(expression) -%}
    {{ return(adapter.dispatch('collapse_spaces', 'cost_pipeline')(expression)) }}
{%- endmacro %}

{% macro default__collapse_spaces(expression) -%}
    regexp_replace({{ expression }}, ' +', ' ', 'g')
{%- endmacro %}

{% macro spark__collapse_spaces(expression) -%}
    regexp_replace({{ expression }}, ' +', ' ')
{%- endmacro %}

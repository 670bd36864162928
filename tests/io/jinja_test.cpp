// Unit tests for the Jinja2 engine. Expected strings were checked against Python Jinja2 3.1
// configured as transformers configures it (trim_blocks, lstrip_blocks, json.dumps tojson).
#include "io/jinja.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opchain::jinja {
namespace {

using nlohmann::ordered_json;

// Renders with the chat-template options unless told otherwise.
std::string render(const std::string& source, const ordered_json& context = ordered_json::object(),
                   Options options = Options{true, true}) {
  return Template::parse(source, options).render(context);
}

// Asserts that `fn` throws E whose message contains every fragment.
template <class E, class Fn>
void expect_error(Fn fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Whitespace control
// ---------------------------------------------------------------------------------------------

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  EXPECT_EQ(render("a  \n  {% if true %}\n  x\n  {% endif %}\n  b\n"), "a  \n  x\n  b");
  EXPECT_EQ(render("{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n"), "  1\n  2\n");
  EXPECT_EQ(render("  {# c #}\nz"), "z");
  EXPECT_EQ(render("line1\n\t{% if 1 %}\n\tin\n\t{% endif %}\nline2"), "line1\n\tin\nline2");
}

TEST(JinjaWhitespace, WithoutOptionsKeepsEverything) {
  EXPECT_EQ(render("a\n  {% if true %}\nx\n  {% endif %}\nb", ordered_json::object(), Options{}), "a\n  \nx\n  \nb");
}

TEST(JinjaWhitespace, MinusAndPlusModifiers) {
  EXPECT_EQ(render("x {{- \" y \" -}} z"), "x y z");
  EXPECT_EQ(render("x\n   {%- if true %} y {% endif -%}   \n  z"), "x y z");
  EXPECT_EQ(render("a {#- strip -#}   b"), "ab");
  // `{%+` disables lstrip_blocks, `+%}` disables trim_blocks.
  EXPECT_EQ(render("{%+ if true %}a{% endif %}\n  {%+ if true %}b{% endif +%}\nc"), "a  b\nc");
}

TEST(JinjaWhitespace, TrailingNewlineAndLineEndings) {
  EXPECT_EQ(render("text\n"), "text");
  EXPECT_EQ(render("text\n", ordered_json::object(), Options{true, true, true}), "text\n");
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
}

TEST(JinjaWhitespace, RawBlocks) {
  EXPECT_EQ(render("{% raw %}{{ not rendered }}{% endraw %} after"), "{{ not rendered }} after");
  EXPECT_EQ(render("  {% raw %}\n  {{ x }}\n  {% endraw %}\nend"), "\n  {{ x }}\nend");
}

// ---------------------------------------------------------------------------------------------
// Values, printing and operators
// ---------------------------------------------------------------------------------------------

TEST(JinjaValues, PrintsLikePython) {
  EXPECT_EQ(render("{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e-05 }} {{ true }} {{ none }}"),
            "1 1.0 1500.0 1e+20 0.30000000000000004 1e-05 True None");
  EXPECT_EQ(render("{{ [1, \"a\", none, true, 1.5, {\"k\": \"v\"}] }} {{ (1, 2) }} {{ (1,) }} {{ [\"it's\"] }}"),
            "[1, 'a', None, True, 1.5, {'k': 'v'}] (1, 2) (1,) [\"it's\"]");
  EXPECT_EQ(render("{{ 'a' 'b' }}|{{ '\\t|\\x41|\\u00e9|\\\\|\\q' }}"), "ab|\t|A|\xC3\xA9|\\|\\q");
}

TEST(JinjaValues, Arithmetic) {
  EXPECT_EQ(
      render("{{ 10/4 }} {{ 10//4 }} {{ -7//2 }} {{ 7 % -3 }} {{ -3 % 5 }} {{ 2**10 }} {{ 2**-1 }} {{ 7.5 // 2 }}"),
      "2.5 2 -4 -2 2 1024 0.5 3.0");
  // Jinja2 binds unary minus tighter than **, and ~ tighter than +.
  EXPECT_EQ(render("{{ -2**2 }} {{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 'a' ~ 2 * 3 }}"), "4 14 20 a6");
  EXPECT_EQ(render("{{ 'ab' * 2 }} {{ [1] * 2 }} {{ [1,2] + [3] }} {{ 'a' + 'b' }} {{ true + 1 }}"),
            "abab [1, 1] [1, 2, 3] ab 2");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true ~ [1] ~ undefined_var }}"), "a1NoneTrue[1]");
}

TEST(JinjaValues, ComparisonsAndLogic) {
  EXPECT_EQ(
      render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }}"),
      "True False True True True True");
  EXPECT_EQ(render("{{ 'a' in 'cat' }} {{ 1 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in nope }}"),
            "True True True True False");
  // and/or return the deciding operand, as in Python.
  EXPECT_EQ(render("{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ not 0 }} {{ not [] }} [{{ none or nope }}]"),
            "2 0 x True True []");
  EXPECT_EQ(render("{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ 1 if 0 else 2 if 0 else 3 }}"),
            "y n [] 3");
}

TEST(JinjaValues, PythonTruthiness) {
  EXPECT_EQ(
      render(
          "{% for v in [0, 0.0, '', [], {}, none, false, 1, 'x', [0], {'a': 0}] %}{{ 'T' if v else 'F' }}{% endfor %}"),
      "FFFFFFFTTTT");
}

TEST(JinjaValues, AccessAndSlicing) {
  const ordered_json ctx = {{"d", {{"x", 1}, {"nested", {{"list", {10, 20, 30}}}}}}};
  EXPECT_EQ(render("{{ d.x }}|{{ d['x'] }}|{{ d.nested.list[-1] }}|{{ d.nested.list.0 }}|[{{ d.missing }}]", ctx),
            "1|1|30|10|[]");
  EXPECT_EQ(
      render("{{ [1,2,3,4][-2:] }} {{ [1,2,3][:-1] }} {{ [1,2,3,4,5][::-2] }} {{ [1,2,3][5:] }} {{ [1,2,3][1:] }}"),
      "[3, 4] [1, 2] [5, 3, 1] [] [2, 3]");
  // Strings index by code point, not byte.
  EXPECT_EQ(render("{{ 'abc'[::-1] }} {{ 'h\xC3\xA9llo'[1:3] }} {{ 'h\xC3\xA9llo'|length }} {{ 'abc'[-1] }} {{ "
                   "'abcdef'[1:5:2] }}"),
            "cba \xC3\xA9l 5 c bd");
}

TEST(JinjaValues, UndefinedBehavesLikeJinja2) {
  EXPECT_EQ(
      render(
          "[{{ u }}]{{ u is defined }}{{ u is undefined }}{{ u|length }}{% for x in u %}x{% endfor %}{{ u is none }}"),
      "[]FalseTrue0False");
  EXPECT_EQ(render("[{{ none.attr }}][{{ [1][5] }}][{{ 'str'.attr }}]"), "[][][]");
  expect_error<InvalidArgumentError>([] { render("line1\n{{ u.attr }}"); }, {"line 2", "'u' is undefined"});
  expect_error<InvalidArgumentError>([] { render("{{ u + 1 }}"); }, {"'u' is undefined"});
  expect_error<InvalidArgumentError>([] { render("{{ {'a': 1}.b + 1 }}"); }, {"has no attribute 'b'"});
}

TEST(JinjaValues, TypeErrorsNameTheLine) {
  expect_error<InvalidArgumentError>([] { render("\n\n{{ 'x' + 1 }}"); }, {"line 3", "can only concatenate str"});
  expect_error<InvalidArgumentError>([] { render("{{ 1 / 0 }}"); }, {"division by zero"});
  expect_error<InvalidArgumentError>([] { render("{% for x in none %}{% endfor %}"); }, {"not iterable"});
  expect_error<InvalidArgumentError>([] { render("{{ 1 in 'abc' }}"); }, {"requires string"});
}

// ---------------------------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------------------------

TEST(JinjaStatements, IfElifElse) {
  EXPECT_EQ(render("{% if false %}1{% elif none %}2{% elif 0 %}3{% else %}4{% endif %}"), "4");
  EXPECT_EQ(render("{% if x %}a{% elif y %}b{% endif %}", {{"y", true}}), "b");
}

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(
      render("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}{{ loop.cycle('a','b') }};{% endfor %}"),
      "-2a;1-3b;2-a;");
  EXPECT_EQ(render("{% for o in [1,2] %}{% for i in [3,4] %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}"),
            "121122");
}

TEST(JinjaStatements, LoopForms) {
  const ordered_json ctx = {{"d", {{"y", 1}, {"x", 2}}}};
  EXPECT_EQ(
      render("{% for k in d %}{{ k }}{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|"
             "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}|{% for (a, b) in [[1, 2]] %}{{ a + b }}{% endfor %}",
             ctx),
      "yx|y=1;x=2;|y1x2|3");
  EXPECT_EQ(render("{% for x in [1,2,3] if x > 1 %}{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}"),
            "1/2 2/2 ");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "13");
}

TEST(JinjaStatements, ScopingFollowsJinja2) {
  // A loop body gets a fresh scope per iteration; nothing leaks out.
  EXPECT_EQ(render("{% set x = 5 %}{% for i in [1,2] %}[{{ x }}]{% set x = i %}{{ x }}{% endfor %}{{ x }}"),
            "[5]1[5]25");
  // if blocks do not scope.
  EXPECT_EQ(render("{% if true %}{% set z = 3 %}{% endif %}{{ z }}"), "3");
  // namespace() is how templates carry state out of loops.
  EXPECT_EQ(render("{% set ns = namespace(a=0, b='s') %}{% for i in [1,2,3] %}{% set ns.a = ns.a + i %}{% endfor %}"
                   "{{ ns.a }}{{ ns.b }}{{ ns['a'] }}"),
            "6s6");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"), "3[]");
}

TEST(JinjaStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c = 1, 2 %}{{ c }}"), "12(1, 2)");
  EXPECT_EQ(render("{% set x %}captured {{ 1 + 1 }}{% endset %}[{{ x }}]{% set y | upper %}low{% endset %}{{ y }}"),
            "[captured 2]LOW");
  expect_error<InvalidArgumentError>([] { render("{% set ns = 3 %}{% set ns.x = 1 %}"); }, {"not a namespace()"});
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render("{% macro f(a, b=2) %}{{ a }}-{{ b }}-{{ g }}{% endmacro %}{% set g = 7 %}"
                   "{{ f(1) }}|{{ f(1, b=3) }}|{{ f(b=4, a=5) }}"),
            "1-2-7|1-3-7|5-4-7");
  EXPECT_EQ(render("{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}"),
            "321");
  expect_error<InvalidArgumentError>([] { render("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"); }, {"macro 'f'"});
  expect_error<InvalidArgumentError>([] { render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"); },
                                     {"recursed deeper"});
}

TEST(JinjaStatements, FilterBlockAndGeneration) {
  EXPECT_EQ(
      render("{% filter upper %}hi {{ 'x' }}{% endfilter %}|{% filter replace('a', 'b')|upper %}aa{% endfilter %}"),
      "HI X|BB");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

// ---------------------------------------------------------------------------------------------
// String methods
// ---------------------------------------------------------------------------------------------

TEST(JinjaMethods, Split) {
  EXPECT_EQ(render("{{ '  a b  '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} "
                   "{{ 'a b c'.rsplit(' ', 1) }} {{ '  a  b '.rsplit(none, 1) }} {{ ''.split() }} {{ ''.split(',') }}"),
            "['a', 'b'] ['a', 'b', '', 'c'] ['a', 'b c'] ['a b', 'c'] ['  a', 'b'] [] ['']");
  EXPECT_EQ(render("{{ 'x</think>y</think>z'.split('</think>')[-1] }}"), "z");
}

TEST(JinjaMethods, StripFamily) {
  EXPECT_EQ(render("[{{ '  x  '.strip() }}][{{ 'xxhixx'.strip('x') }}][{{ '\\n\\nhi\\n'.lstrip('\\n') }}]"
                   "[{{ 'ab  '.rstrip() }}][{{ '\xC3\xA9"
                   "a\xC3\xA9'.strip('\xC3\xA9') }}]"),
            "[x][hi][hi\n][ab][a]");
}

TEST(JinjaMethods, PredicatesAndTransforms) {
  EXPECT_EQ(render("{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} "
                   "{{ 'hello'.startswith('l', 2) }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }}"),
            "bbb bba -a-b-");
  EXPECT_EQ(render("{{ 'Hi There'.upper() }} {{ 'Hi There'.lower() }} {{ \"hello world's\".title() }} {{ "
                   "'hELLO'.capitalize() }}"),
            "HI THERE hi there Hello World'S Hello");
  EXPECT_EQ(
      render("{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'h\xC3\xA9llo'.find('l') }} "
             "{{ 'hello'.count('l') }} {{ ', '.join(['a', 'b']) }}"),
      "2 3 -1 2 2 a, b");
  EXPECT_EQ(
      render("{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }}"),
      "1 and b xyx n!");
  EXPECT_EQ(render("{{ '%s=%d %.2f %r|%-3s|%03d %%' % ('a', 3, 2.5, 'q', 'l', 7) }}"), "a=3 2.50 'q'|l  |007 %");
}

TEST(JinjaMethods, DictMethods) {
  const ordered_json ctx = {{"d", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(render("{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('z') }} "
                   "{{ d.get('z', 0) }}",
                   ctx),
            "['b', 'a'] [1, 2] [('b', 1), ('a', 2)] 2 None 0");
}

// ---------------------------------------------------------------------------------------------
// Tests (`is ...`)
// ---------------------------------------------------------------------------------------------

TEST(JinjaTests, TypeTests) {
  EXPECT_EQ(
      render("{{ 's' is string }} {{ 1 is string }} {{ none is none }} {{ {} is mapping }} {{ [] is mapping }} "
             "{{ 'x' is iterable }} {{ 1 is iterable }} {{ 1.5 is number }} {{ true is number }} {{ true is integer }} "
             "{{ 1.5 is float }} {{ [1] is sequence }} {{ range is callable }}"),
      "True False True True False True False True True False True True True");
  EXPECT_EQ(render("{{ x is not none }} {{ x is defined }} {{ y is not defined }} {{ false is false }} {{ 1 is true }}",
                   {{"x", 1}}),
            "True True True True False");
}

TEST(JinjaTests, ValueTests) {
  EXPECT_EQ(render("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 1 is eq 1 }} "
                   "{{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is ge 3 }} {{ 1 is in [1] }} {{ false is sameas false }} "
                   "{{ 'abc' is lower }} {{ 'Ab' is upper }}"),
            "True True True False True True True False True True True False");
}

// ---------------------------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------------------------

TEST(JinjaFilters, ToJsonMatchesPythonJsonDumps) {
  const ordered_json ctx = {
      {"x",
       {{"b", "\xC3\xA9\"\n\t\x01/"}, {"a", {1, 2.0, 1e100, -0.5, true, nullptr}}, {"e", ordered_json::object()}}}};
  // ensure_ascii=False, ", " and ": " separators, insertion order kept.
  EXPECT_EQ(render("{{ x|tojson }}", ctx),
            "{\"b\": \"\xC3\xA9\\\"\\n\\t\\u0001/\", \"a\": [1, 2.0, 1e+100, -0.5, true, null], \"e\": {}}");
  EXPECT_EQ(
      render("{{ x|tojson(indent=2) }}", ctx),
      "{\n  \"b\": \"\xC3\xA9\\\"\\n\\t\\u0001/\",\n  \"a\": [\n    1,\n    2.0,\n    1e+100,\n    -0.5,\n    true,\n"
      "    null\n  ],\n  \"e\": {}\n}");
  EXPECT_EQ(render("{{ x.a|tojson(separators=(',', ':')) }} {{ x.e|tojson(sort_keys=true) }} {{ "
                   "x.b|tojson(ensure_ascii=true) }}",
                   ctx),
            "[1,2.0,1e+100,-0.5,true,null] {} \"\\u00e9\\\"\\n\\t\\u0001/\"");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"), "{\"a\": 2, \"b\": 1}");
  expect_error<InvalidArgumentError>([] { render("{{ u|tojson }}"); }, {"not JSON serializable"});
}

TEST(JinjaFilters, KeyOrderDependsOnJsonType) {
  const std::string src = "{{ d|tojson }}";
  EXPECT_EQ(Template::parse(src).render(ordered_json{{"d", {{"z", 1}, {"a", 2}}}}), "{\"z\": 1, \"a\": 2}");
  EXPECT_EQ(Template::parse(src).render(nlohmann::json{{"d", {{"z", 1}, {"a", 2}}}}), "{\"a\": 2, \"z\": 1}");
}

TEST(JinjaFilters, Basics) {
  EXPECT_EQ(
      render(
          "{{ [1,2,3]|length }} {{ 'abc'|count }} {{ {'a': 1}|length }} [{{ '  x '|trim }}] {{ 'xxyxx'|trim('x') }}"),
      "3 3 1 [x] y");
  EXPECT_EQ(
      render("{{ u|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ ''|d('e', boolean=true) }}"),
      "d None d e");
  EXPECT_EQ(render("{{ [1,2]|first }} {{ 'abc'|last }} {{ {'a': 1}|first }} [{{ []|first }}]"), "1 c a []");
  EXPECT_EQ(render("{{ [1,2,3]|join('-') }} {{ [1,2]|join }} {{ [{'n': 'a'}, {'n': 'b'}]|join(',', attribute='n') }}"),
            "1-2-3 12 a,b");
  EXPECT_EQ(
      render("{{ 3.7|int }} {{ '42'|int }} {{ '4.5'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 'ff'|int(base=16) }} "
             "{{ 3|float }} {{ '2.5'|float }}"),
      "3 42 4 0 7 255 3.0 2.5");
  EXPECT_EQ(
      render(
          "{{ 'abc'|list }} {{ {'a': 1}|list }} {{ 'x'|string }} {{ [1]|string }} {{ 'Hi'|lower }} {{ 'Hi'|upper }}"),
      "['a', 'b', 'c'] ['a'] x [1] hi HI");
  EXPECT_EQ(
      render(
          "{{ 'hello world'|capitalize }} {{ \"hello world-foo(bar) x's\"|title }} {{ '<b>'|safe }} {{ '<a&\"'|e }}"),
      "Hello world Hello World-Foo(Bar) X's <b> &lt;a&amp;&#34;");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|items|list }} {{ {'b': 1, 'a': 2}|dictsort }} {{ (1, 2)|list }}"),
            "[('b', 1), ('a', 2)] [('a', 2), ('b', 1)] [1, 2]");
}

TEST(JinjaFilters, Collections) {
  EXPECT_EQ(render("{{ [{'n': 'a'}, {'n': 'b'}, {}]|map(attribute='n')|list }} {{ ['a', 'B']|map('upper')|list }} "
                   "{{ ['1', '2']|map('int')|sum }}"),
            "['a', 'b', Undefined] ['A', 'B'] 3");
  EXPECT_EQ(
      render("{{ [{'n': 1}, {'n': 0}]|selectattr('n')|list }} {{ [{'n': 1}, {'n': 0}]|rejectattr('n')|list }} "
             "{{ [1,2,3,4]|select('even')|list }} {{ [1,2,3,4]|reject('odd')|list }} {{ [0, 1, '', 2]|select|list }}"),
      "[{'n': 1}] [{'n': 0}] [2, 4] [2, 4] [1, 2]");
  EXPECT_EQ(render("{{ [{'r': 'a'}, {'r': 'b'}, {'r': 'a'}]|selectattr('r', 'equalto', 'a')|list|length }} "
                   "{{ [1, 5, 10]|select('>', 3)|list }}"),
            "2 [5, 10]");
  EXPECT_EQ(render("{{ [3,1,2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ [3,1,2]|sort(reverse=true) }} "
                   "{{ [{'a': 2}, {'a': 1}]|sort(attribute='a') }} {{ [1,2,2,'a','A']|unique|list }}"),
            "[1, 2, 3] ['A', 'b', 'c'] [3, 2, 1] [{'a': 1}, {'a': 2}] [1, 2, 'a']");
  EXPECT_EQ(
      render("{{ [3,1,2]|min }} {{ [3,1,2]|max }} {{ [1,2,3]|sum }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }} "
             "{{ 'abc'|reverse }} {{ [1,2]|reverse|list }}"),
      "1 3 6 3 cba [2, 1]");
}

TEST(JinjaFilters, NumbersAndText) {
  EXPECT_EQ(render("{{ 2.5|round }} {{ 3.5|round }} {{ 3|round }} {{ 2.567|round(2) }} {{ 2.1|round(0, 'ceil') }} "
                   "{{ -3|abs }} {{ (-2.5)|abs }}"),
            "2.0 4.0 3 2.57 3.0 3 2.5");
  EXPECT_EQ(
      render("{{ 'a\\nb'|indent(2) }}|{{ 'a\\nb\\n\\nc'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}"),
      "a\n  b|  a\n  b\n\n  c|a\n  \n  b");
  EXPECT_EQ(render("{{ 'aaa'|replace('a', 'b', 1) }} {{ '%s-%s'|format(1, 'x') }}"), "baa 1-x");
}

// ---------------------------------------------------------------------------------------------
// Globals
// ---------------------------------------------------------------------------------------------

TEST(JinjaGlobals, Functions) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b=2) }} "
                   "{{ namespace(x=1).x }}"),
            "[0, 1, 2] [1, 3, 5] [5, 3, 1] {'a': 1, 'b': 2} 1");
  expect_error<InvalidArgumentError>([] { render("ok\n{{ raise_exception('roles must alternate') }}"); },
                                     {"line 2", "roles must alternate"});
}

// ---------------------------------------------------------------------------------------------
// Errors: unsupported constructs are FormatError naming the construct and line
// ---------------------------------------------------------------------------------------------

TEST(JinjaErrors, UnknownFilterNamesFilterAndLine) {
  expect_error<FormatError>([] { Template::parse("line1\n{{ x | frobnicate }}"); }, {"line 2", "filter 'frobnicate'"});
}

TEST(JinjaErrors, UnsupportedConstructsAtParse) {
  expect_error<FormatError>([] { Template::parse("a\nb\n{% include 'x.html' %}"); }, {"line 3", "tag '{% include %}'"});
  expect_error<FormatError>([] { Template::parse("{% if x is weird %}{% endif %}"); }, {"line 1", "test 'weird'"});
  expect_error<FormatError>([] { Template::parse("\n\n{{ 'a'.zfill(3) }}"); }, {"line 3", "method '.zfill()'"});
  expect_error<FormatError>([] { Template::parse("{{ foo(1) }}"); }, {"function 'foo()'"});
  expect_error<FormatError>([] { Template::parse("{% for x in y recursive %}{% endfor %}"); }, {"recursive"});
  expect_error<FormatError>([] { Template::parse("{% macro m() %}{{ caller() }}{% endmacro %}"); }, {"caller()"});
  expect_error<FormatError>([] { render("{{ 'x'|map('nope')|list }}"); }, {"filter 'nope'"});
}

TEST(JinjaErrors, SyntaxErrors) {
  expect_error<FormatError>([] { Template::parse("{% for x in y %}\n{% if x %}\n"); },
                            {"line 2", "never closed", "endif"});
  expect_error<FormatError>([] { Template::parse("{% endif %}"); }, {"unexpected '{% endif %}'"});
  expect_error<FormatError>([] { Template::parse("{{ 1 + }}"); }, {"expected an expression"});
  expect_error<FormatError>([] { Template::parse("{{ 'abc }}"); }, {"unterminated string"});
  expect_error<FormatError>([] { Template::parse("{# open"); }, {"unterminated comment"});
  expect_error<FormatError>([] { Template::parse("{% break %}"); }, {"outside of a for loop"});
}

TEST(JinjaErrors, HostileInputFailsCleanly) {
  expect_error<FormatError>(
      [] { Template::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"); },
      {"nested too deeply"});
  ordered_json deep = 1;
  for (int i = 0; i < 2000; ++i) deep = ordered_json::array({deep});
  expect_error<InvalidArgumentError>([&] { render("{{ d }}", {{"d", deep}}); }, {"nested deeper"});
  expect_error<InvalidArgumentError>([] { Template::parse("x").render(ordered_json::array()); },
                                     {"must be a JSON object"});
  EXPECT_EQ(Template::parse("x{{ a }}").render(ordered_json()), "x");
}

}  // namespace
}  // namespace opchain::jinja

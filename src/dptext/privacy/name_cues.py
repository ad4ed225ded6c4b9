"""Casing-free cues for person names (used by :class:`dptext.privacy.names.NameDetector`).

* cue phrases after which the next word is a name (``my name is``, ``dear``, ``cc``, ``patient`` …), also
  across a line break or a dash (a signature: ``regards,\nokafor``, ``cheers -- tunde``), and a speaker at
  the start of a line of dialogue;
* a signature after a dash that ends the message (``talk soon - zerafet``);
* the subject of a person's verb (``kowalczyk lives at``, with a listed given name before it: ``angel martin
  lives``), a list of three or more given names or name words with two distinctive names among them, two people
  joined by ``and`` beside a distinctive name (a place is not one: ``Perth and Darwin``), and the other one of
  ``X and I`` or ``me and X``.
"""

from __future__ import annotations

import re

_DETERMINERS = frozenset("the a an this that these those my your our their its his every each any some no".split())

# a role before the person's name: "nurse pahal", "JUDGE FAN"; a role that is also a given name may be the first
# name itself ("pastor valero")
_ROLES = ("nurse", "judge", "coach", "officer", "captain", "sergeant", "detective", "inspector", "agent", "senator",
          "mayor", "governor", "pastor", "rabbi", "imam")
# phrases after which the next word is a person's name: introductions, greetings, sign-offs, roles
_CUES = ("ask", "asked", "tell", "told", "met", "my name is", "name is", "names are", "named", "called", "dear", "hi",
         "hello", "thanks", "thank you", "cc", "copy", "delivery for", "parcel for", "package for",
         "signed", "sincerely", "regards", "cheers", "love", "patient", "pt", "client", "tenant", "attn", "attention",
         "c/o", "son", "daughter", "wife", "husband", "kid", "child", "mother", "father", "mom", "dad", "brother",
         "sister", "uncle", "aunt", "grandson", "granddaughter", "nephew", "niece", "cousin", "friend", "boss",
         "colleague", "neighbour", "neighbor", "partner", "fiancé", "fiancée", "surname", "née", "nee", "aka",
         # verbs whose object is a person: only a word no English list knows or a distinctive listed name follows
         "ask for", "remind", "reminded", "spoke with", "spoke to", "speak with", "speak to", "talk to",
         "talked to", "pick up", "picked up", "drop off", "dropped off", "happy birthday", "congrats to",
         "congratulations to", "text", "call", "email",
         "ring", "message", "shoutout to", "shout out to", "kudos to", "props to", "plaintiff", "defendant",
         "claimant", "witness", "beneficiary", "payable to", "pupil", "student", "employee", "owner", "driver",
         "auntie", "aunty", "grandma", "grandpa", "landlord", "landlady", "guest", "passenger", "tutor", "volunteer",
         # who sent or did something: "message from oyelaran:", "escalated to kowalczyk", "opened by ngubane"
         "message from", "note from", "email from", "text from", "call from", "letter from", "gift from",
         "assigned to", "escalated to", "opened by", "seen by", "referred by", "approved by", "signed by",
         "submitted by") + _ROLES
_KIN = frozenset("son daughter wife husband kid kids child children mother father mom mum dad brother sister uncle "
                 "aunt grandson granddaughter grandmother grandfather grandma grandpa nephew niece cousin friend boss "
                 "colleague neighbour neighbor partner fiancé fiancée girlfriend boyfriend parents".split())
_CUE_KEYS = {tuple(c.split()) for c in _CUES}
# a form's field label before its colon ("Tel: +44 20 7946 0958", "Attn: Brown"): no speaker, no name
_FIELD_LABELS = frozenset("tel tel. telephone phone ph fax mob mobile cell email e-mail mail dob ref attn".split())


def field_label(text, start, end) -> bool:
    """``text[start:end]`` is a form's field label right before its colon (``Tel:``, ``ATTN:``)."""
    return text[end:end + 1] == ":" and text[start:end].casefold() in _FIELD_LABELS
# cues of an addressee, after which a capitalized surname that is a frequent word is the name ("Delivery for Brown")
_ADDRESSEE = {("delivery", "for"), ("parcel", "for"), ("package", "for"), ("attn",), ("attention",), ("c/o",),
              ("dear",), ("payable", "to")}
_NO_ADDRESSEE = frozenset("sir sirs madam madame all team customer customers client clients friend friends colleague "
                          "colleagues member members user users guest guests parent parents resident residents patient "
                          "patients valued hiring manager applicant candidate reader readers editor editors "
                          "everyone everybody folks occupant owner neighbour neighbor".split())
_CUE_WORDS = frozenset(c for c in _CUES if " " not in c)  # "happy birthday mom": a cue word is never the name
_CUE_MAX = max(len(k) for k in _CUE_KEYS)
# a dash set apart by a space, then one or two words and the end of the message: a sign-off
_SIGN_DASH = re.compile(r"[\W\d_]*\s(?:-{1,2}|[–—])[ \t]*")
_SIGN_END = re.compile(r"(?:[ \t][^\W\d_][\w'’-]*)?[\s.!]*")


def _cued(text, toks, lex):
    """Indices of tokens right after a name cue that are not frequent English words (so "dear all" is not cued),
    or after an addressee's cue, listed surnames written as proper nouns ("Delivery for Brown at")."""
    words = [t[2] for t in toks]
    out = set()
    for i, (s, e, w) in enumerate(toks):  # a speaker at the start of a line of dialogue: 'Yakha: "Who are you?"'
        # not a field whose value is a code ("IBAN: CH26 7556", "PNR: X7K2Q")
        if text[e:e + 1] == ":" and not lex.is_word(w) and not field_label(text, s, e) \
                and text[text.rfind("\n", 0, s) + 1:s].strip() == "" \
                and not any(c.isdigit() for c in "".join(text[e + 1:e + 60].split(None, 1)[:1])):
            out.add(i)
    for i in range(1, len(toks)):
        s, e, w = toks[i]
        listed = w in lex.first and w not in lex.stop or w in lex.last and not lex.common(w)  # "my kid fred"
        # after an addressee's cue, a word written as a proper noun is the name, listed or not, a frequent word or
        # not: "Delivery for Brown at", "Attn: Seven" (not after other cues: "Asked Flight attendant", "call
        # Getting"); a salutation to no one in particular is not ("Dear Sir", "Dear Customer")
        proper = text[s].isupper() and text[s + 1:e].islower() and w not in _NO_ADDRESSEE
        if len(w) < 2 or lex.is_word(w) and not (listed or proper) or w.split("'")[0] in lex.stop:  # "dear all"
            continue
        if w in _PERSON_VERBS or w in _CUE_WORDS:
            # "my kid said": the cue's person is the subject, the verb ("said", a listed name) is none; "happy
            # birthday mom": a cue word ("mom", a listed name) is none either
            continue
        strong = listed or not lex.is_word(w)
        if _SIGN_DASH.fullmatch(text, toks[i - 1][1], toks[i][0]) and _SIGN_END.fullmatch(text, e):
            if strong:
                out.add(i)  # a signature after a dash that ends the message: "talk soon - zerafet"
            continue
        if toks[i - 1][1] == toks[i][0] or text[toks[i - 1][1]:toks[i][0]].strip(" ,:\t\r\n-–—") != "":
            continue  # the cue and the name are separated by spaces, line breaks, a comma, colon or dash only
        for k in range(1, min(_CUE_MAX, i) + 1):
            if tuple(words[i - k:i]) in _CUE_KEYS and all(toks[j][1] + 1 == toks[j + 1][0] for j in range(i - k, i - 1)):
                if strong or tuple(words[i - k:i]) in _ADDRESSEE:
                    out.add(i)
                break
    return out


# verbs whose subject is a person: the word before them, if no English word or a listed name, is a name
_PERSON_VERBS = frozenset("lives lived said says wrote writes asked replied confirmed reported moved died married "
                          "told phoned emailed texted smiled laughed cried apologized apologised shouted whispered "
                          "graduated retired resigned thanked hugged kissed argued picks collects owes".split())
_BETWEEN = frozenset("just already also still finally never has had then".split())
_LIST_GAPS = (", ", " and ", ", and ", " & ", " or ", " / ")


def tagged(text, tok) -> bool:
    """``tok`` opens a handle or a hashtag (``@united``, ``#deflategate``)."""
    return text[tok[0] - 1:tok[0]] in ("@", "#")


def _owned(word):
    """``word`` is a determiner or a possessive: the noun after it is a common noun (``her doctor``, ``the
    company's boss``), no name."""
    return word in _DETERMINERS or word == "her" or word.endswith("'s")


def _strengthen(text, toks, kinds, lex):
    """Casing-free cues that make a listed or unlisted word a name (``kinds`` changed in place).

    * the subject of a person's verb: ``kowalczyk lives at``, ``MARK SAID``; not after a determiner or
      possessive (``her doctor said``, ``THE NURSE TOLD``, ``the company's boss resigned``);
    * the owner of a relative or friend: ``patience's mother``, ``MARK'S WIFE``;
    * a list of three or more given names: ``mark, june and rose``;
    * one of ``X and I``, ``X and his …``, ``me and X``, and two people joined by ``and``.
    """
    n = len(toks)
    for i in range(n - 1):
        w = toks[i][2]
        # an adverb or auxiliary may stand between: "anasa just texted", "KOWALCZYK HAS MOVED"
        v = i + 2 if i + 2 < n and toks[i + 1][2] in _BETWEEN and text[toks[i + 1][1]:toks[i + 2][0]] == " " else i + 1
        if toks[v][2] in _PERSON_VERBS and text[toks[i][1]:toks[i + 1][0]] == " " and len(w) > 1 \
                and not tagged(text, toks[i]) \
                and not (i and _owned(toks[i - 1][2])) and kinds[i] is not None:
            if kinds[i] in ("unknown", "last-common", "first-common"):
                kinds[i] = "first" if kinds[i].startswith("first") else "last"
            kinds[v] = None  # the verb itself ("SAID", a listed name) is no name word here: "MARTIN SAID"
            # a listed given name right before the subject is its first name: "angel martin lives", "ROSE HILL SAID"
            if i and kinds[i - 1] == "first-common" and kinds[i] in ("first", "last") \
                    and text[toks[i - 1][1]:toks[i][0]] == " " and not (i > 1 and _owned(toks[i - 2][2])):
                kinds[i - 1] = "first"
    # the owner of a relative or a friend: "patience's mother", "MARK'S WIFE"; not "the company's boss"
    for i in range(n - 1):
        if toks[i][2].endswith("'s") and toks[i + 1][2] in _KIN and text[toks[i][1]:toks[i + 1][0]] == " " \
                and kinds[i] in ("first-common", "last-common", "last-rare", "unknown") \
                and not (i and _owned(toks[i - 1][2])) and not tagged(text, toks[i]):
            kinds[i] = "first" if kinds[i] == "first-common" else "last"
    # a list of three or more name words, two of them distinctive: "mark, june and rose", "eve, vakarė and cezara"
    item = ("first", "first-common", "last", "last-common", "unknown")
    i = 0
    while i < n:
        items, j = [i], i
        while kinds[j] in item:
            nxt = j + 2 if j + 2 < n and toks[j + 1][2] in ("and", "or") else j + 1
            if nxt >= n or kinds[nxt] not in item or text[toks[j][1]:toks[nxt][0]].lower() not in _LIST_GAPS:
                break
            items.append(nxt)
            j = nxt
        if len(items) >= 3 and "," in text[toks[i][1]:toks[j][0]] and (
                all(kinds[k].startswith("first") for k in items)
                or sum(kinds[k] in ("first", "last") for k in items) >= 2):
            for k in items:
                kinds[k] = "first" if kinds[k].startswith("first") else "last"
        i = j + 1
    # one of "X and I", "X and his/her …", "me and X": a person, when a name list knows X (as a given name, or as a
    # surname that is no frequent word) or no English list does ("shekoni and i are", "ogbuehi and his brother",
    # "ME AND GRACE"); not "coffee and I", nor after a determiner ("the kids and I")
    for i in range(n):
        after = i + 2 < n and toks[i + 1][2] == "and" and toks[i + 2][2] in ("i", "me", "his", "her") \
            and text[toks[i][1]:toks[i + 2][0]].lower() == " and "
        before = i > 1 and toks[i - 2][2] == "me" and toks[i - 1][2] == "and" \
            and text[toks[i - 2][1]:toks[i][0]].lower() == " and "
        x = i if after or before else None
        # "X and his/her …" is about a person even when X is a frequent word that is a listed name ("blessing
        # and his wife"); "coffee and I" is not
        his = after and toks[i + 2][2] in ("his", "her")
        if x is not None and (kinds[x] in ("unknown", "first-common", "last-rare")
                              or kinds[x] == "last-common" and (his or not lex.common(toks[x][2]))) \
                and not (x and _owned(toks[x - 1][2])) \
                and not tagged(text, toks[x]):
            kinds[x] = "first" if kinds[x] == "first-common" else "last"
    # two people joined by "and" / "&": beside a distinctive listed name, a word no English list knows or a listed
    # given name that is also a word is a name too ("esna and ilgı", "DAWN AND AMANDA")
    for a in range(n - 1):
        b = a + 2 if a + 2 < n and toks[a + 1][2] == "and" else a + 1
        if b >= n or text[toks[a][1]:toks[b][0]].lower() not in (" and ", " & "):
            continue
        for x, y in ((a, b), (b, a)):
            w = toks[y][2]
            # an infrequent English word there is a name too: "chukwu and yogi"
            # (a place is not: "Perth and Darwin")
            rare = kinds[y] is None and len(w) > 2 and "'" not in w and not lex.common(w) and not tagged(text, toks[y]) \
                and w not in lex.places
            if kinds[x] in ("first", "last") and (kinds[y] in ("unknown", "first-common") or rare):
                kinds[y] = "first" if kinds[y] == "first-common" else "last"

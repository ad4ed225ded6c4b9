"""Word lists of the address patterns in :mod:`.addresses`: street types written after the name (USPS, and
Australian and New Zealand ones) and before it (continental, Latin American), small words inside place names,
US state codes, and words that never belong to a street name."""

from __future__ import annotations

# USPS street suffixes (Publication 28, Appendix C1), long forms and standard abbreviations, and some Australian
# and New Zealand ones. In the patterns of .addresses, a look-ahead for a letter before each long alternation lets
# the engine skip it at once where a digit or a space stands (Python's re tries every branch in turn: about 5x
# faster on long runs of digits)
SUFFIXES = (
    "Alley|Aly|Annex|Anx|Arcade|Arc|Avenue|Ave|Av|Bayou|Byu|Beach|Bch|Bend|Bnd|Bluff|Blf|Bluffs|Blfs|Bottom|Btm|"
    "Boulevard|Blvd|Branch|Br|Bridge|Brg|Brook|Brk|Brooks|Burg|Bg|Burgs|Bypass|Byp|Camp|Cp|Canyon|Cyn|Cape|Cpe|"
    "Causeway|Cswy|Center|Ctr|Centers|Circle|Cir|Circles|Cliff|Clf|Cliffs|Clfs|Club|Clb|Common|Commons|Corner|Cor|"
    "Corners|Cors|Course|Crse|Court|Ct|Courts|Cts|Cove|Cv|Coves|Creek|Crk|Crescent|Cres|Crest|Crossing|Xing|"
    "Crossroad|Crossroads|Curve|Dale|Dl|Dam|Dm|Divide|Dv|Drive|Dr|Drives|Estate|Est|Estates|Ests|Expressway|Expy|"
    "Extension|Ext|Extensions|Fall|Falls|Fls|Ferry|Fry|Field|Fld|Fields|Flds|Flat|Flt|Flats|Ford|Frd|Fords|Forest|"
    "Frst|Forge|Frg|Forges|Fork|Frk|Forks|Fort|Ft|Freeway|Fwy|Garden|Gdn|Gardens|Gdns|Gateway|Gtwy|Glen|Gln|Glens|"
    "Green|Grn|Greens|Grove|Grv|Groves|Harbor|Hbr|Harbors|Haven|Hvn|Heights|Hts|Highway|Hwy|Hill|Hl|Hills|Hls|"
    "Hollow|Holw|Inlet|Island|Is|Islands|Isle|Junction|Jct|Junctions|Key|Ky|Keys|Knoll|Knl|Knolls|Lake|Lk|Lakes|"
    "Land|Landing|Lndg|Lane|Ln|Light|Lgt|Lights|Loaf|Lf|Lock|Lck|Locks|Lodge|Ldg|Loop|Mall|Manor|Mnr|Manors|"
    "Meadow|Mdw|Meadows|Mdws|Mews|Mill|Ml|Mills|Mission|Msn|Motorway|Mtwy|Mount|Mt|Mountain|Mtn|Mountains|Neck|"
    "Nck|Orchard|Orch|Oval|Overpass|Opas|Park|Parks|Parkway|Pkwy|Parkways|Pass|Passage|Psge|Path|Pike|Pine|Pines|"
    "Pnes|Place|Pl|Plain|Pln|Plains|Plns|Plaza|Plz|Point|Pt|Points|Pts|Port|Prt|Ports|Prairie|Pr|Radial|Radl|Ramp|"
    "Ranch|Rnch|Rapid|Rpd|Rapids|Rpds|Rest|Rst|Ridge|Rdg|Ridges|Rdgs|River|Riv|Road|Rd|Roads|Rds|Route|Rte|Row|"
    "Rue|Run|Shoal|Shl|Shoals|Shore|Shr|Shores|Shrs|Skyway|Skwy|Spring|Spg|Springs|Spgs|Spur|Spurs|Square|Sq|"
    "Squares|Station|Sta|Stravenue|Stra|Stream|Strm|Street|St|Streets|Summit|Smt|Terrace|Ter|Throughway|Trwy|"
    "Trace|Trce|Track|Trak|Trafficway|Trfy|Trail|Trl|Trailer|Trlr|Tunnel|Tunl|Turnpike|Tpke|Underpass|Upas|Union|"
    "Un|Unions|Valley|Vly|Valleys|Via|Viaduct|Via|View|Vw|Views|Village|Vlg|Villages|Ville|Vl|Vista|Vis|Walk|"
    "Walks|Wall|Way|Ways|Well|Wl|Wells|"
    # Australian and New Zealand street types (AS/NZS 4819) that are not everyday words after a number
    "Esplanade|Esp|Parade|Pde|Promenade|Quay|Wharf|Wynd|Brae|Glade|Grange|Laneway|Pathway|Walkway|Riverway|"
    "Boardwalk|Concourse|Crossway|Ridgeway|Circuit|Cct|Amble|Tollway")

PREFIX = (r"(?:rue|avenue|av\.?|boulevard|bd\.?|chemin|allée|place|impasse|quai|venelle|cours|passage|route|via|viale|"
           # French types that are no English words: "140 cour du Petit Change", "448 rang Emma" (Québec)
           r"cour|rang|sentier|ruelle|montée|hameau|faubourg|chaussée|parvis|"
           r"piazza|piazzale|corso|vicolo|borgo|stretto|contrada|lungomare|strada|calle|c/|avenida|avda\.?|plaza|paseo|"
           r"pasadizo|ronda|travesía|carrer|camino|rua|rúa|travessa|largo|alameda|ladeira|ulica|ul\.|aleja|al\.|"
           r"pl\.|plac|os\.|osiedle|straße|im|am|za|na|"
           # German streets named by a preposition and an article: "An den Siedlergärten", "Unter den Linden"
           r"(?:an|auf|unter|hinter|vor)\s+(?:der|den|dem)|zum|zur|"
           # Romanian, Spanish and Portuguese types: "Intrarea Florica Ardelean", "Callejón Muñoz", "Peatonal Hidalgo 12",
           # "Praça Iara Moura"
           r"str\.|intrarea|aleea|bulevardul|drumul|calea|splaiul|șoseaua|soseaua|piața|diagonal|diag\.|blv\.|"
           r"callejón|callejon|viaducto|continuación|retorno|circuito|cerrada|privada|prolongación|periférico|"
           r"andador|peatonal|calzada|corredor|praça|praca|estrada|rodovia|avinguda)")

# small words inside place names: "Laa an der Thaya", "Újezd u Brna", "Hluboká nad Vltavou", "San Juan y Anexas"
PARTICLES = ("de", "del", "della", "di", "du", "des", "la", "le", "los", "las", "da", "do", "dos", "von", "van", "der",
             "den", "am", "an", "im", "zum", "zur", "u", "nad", "pod", "y")

STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|"
           "OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC|PR|GU|VI|AS|MP")

# words of a clause, never of a street name; written title-case they may be a name ("Will Rogers Rd")
CLAUSE = frozenset("i he she it we they you him them us me will would shall should can could must might has have "
                    "had were been being did does do when while because although though that which who whom whose "
                    "into onto than unless until".split())


# words before a number that make it a phone, a vehicle's plate or a ticket's, never a street: "phone 052 597 55 22"
# (a street-like "phone 052" beside a code-like "597 55"), "car KF 87960"
NOT_STREET = frozenset("phone tel telephone mobile cell fax call text car van truck reg plate card account order "
                        "invoice ticket ph whatsapp sms ssn passport licence license iban".split())
